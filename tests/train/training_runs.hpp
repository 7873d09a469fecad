#pragma once
// A fixture for tests that run the trainer: a fresh folder per test for the
// runs, one LibTorch thread (bit-identical reductions between runs), and no
// stop request left over from another test.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "vit/train/stop_signal.hpp"

namespace vit::testing {

class TrainingRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    dir_ = std::filesystem::temp_directory_path() /
           ("vit_training_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    clear_stop_request();
  }
  void TearDown() override {
    clear_stop_request();
    std::filesystem::remove_all(dir_);
  }
  // The folder of the run called `name`.
  std::string run(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace vit::testing
