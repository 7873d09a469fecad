#pragma once
// Data-parallel tests in one process: ranks as threads, over Gloo on
// loopback (an in-memory store stands in for torchrun's TCP store).
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "vit/train/distributed.hpp"

namespace vit::testing {

// Runs body(rank, group) on `world` threads, one rank each; a rank's
// exception fails the test, naming the rank.
inline void run_ranks(int world, const std::function<void(int, ProcessGroup&)>& body) {
  const auto store = ProcessGroup::make_local_store();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(world);
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      try {
        auto group = ProcessGroup::join_local(store, rank, world, std::chrono::seconds(30));
        body(rank, *group);
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  for (int rank = 0; rank < world; ++rank)
    EXPECT_EQ(errors[rank], "") << "rank " << rank;
}

}  // namespace vit::testing
