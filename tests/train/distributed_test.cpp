// train/distributed: torchrun's environment, the backend choice, and the
// collectives, run by two ranks as threads of this process over Gloo on
// loopback (an in-memory store stands in for torchrun's TCP store).
#include "vit/train/distributed.hpp"

#include <stdlib.h>

#include <csignal>
#include <functional>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "local_ranks.hpp"
#include "vit/data/batch_loader.hpp"
#include "vit/infer/evaluate.hpp"
#include "vit/train/distributed_evaluation.hpp"

namespace vit {
namespace {

using Env = std::map<std::string, std::string>;
using testing::run_ranks;

std::optional<DistributedEnv> env_of(const Env& values) {
  return distributed_env([&](const char* name) -> const char* {
    const auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.c_str();
  });
}

const Env kTorchrunRank1 = {{"RANK", "1"},
                            {"WORLD_SIZE", "4"},
                            {"LOCAL_RANK", "1"},
                            {"LOCAL_WORLD_SIZE", "2"},
                            {"MASTER_ADDR", "node0"},
                            {"MASTER_PORT", "29500"},
                            {"TORCHELASTIC_USE_AGENT_STORE", "True"}};

TEST(DistributedEnvTest, AloneWhenTorchrunSetNothing) {
  EXPECT_FALSE(env_of({}).has_value());
  EXPECT_FALSE(env_of({{"OMP_NUM_THREADS", "1"}}).has_value());
}

TEST(DistributedEnvTest, ReadsTorchrunsVariables) {
  const auto env = env_of(kTorchrunRank1);
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 2);
  EXPECT_EQ(env->master_addr, "node0");
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_TRUE(env->agent_store);
  Env by_hand = kTorchrunRank1;
  by_hand.erase("TORCHELASTIC_USE_AGENT_STORE");
  by_hand.erase("LOCAL_WORLD_SIZE");
  EXPECT_FALSE(env_of(by_hand)->agent_store);
  EXPECT_EQ(env_of(by_hand)->local_world_size, 1);
}

// The data's one listing per machine asks for LOCAL_WORLD_SIZE this way.
TEST(DistributedEnvTest, LocalWorldSizeIsOneAloneAndTorchrunsOtherwise) {
  for (const char* name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    ::unsetenv(name);
  EXPECT_EQ(vit::local_world_size(), 1);
  for (const auto& [name, value] : kTorchrunRank1)
    ::setenv(name.c_str(), value.c_str(), 1);
  EXPECT_EQ(vit::local_world_size(), 2);
  ::setenv("LOCAL_WORLD_SIZE", "9", 1);  // more than WORLD_SIZE 4
  EXPECT_THROW(vit::local_world_size(), vit::Error);
  for (const auto& entry : kTorchrunRank1)
    ::unsetenv(entry.first.c_str());
}

TEST(DistributedEnvTest, PartialOrMalformedEnvironmentIsAnError) {
  Env partial = kTorchrunRank1;
  partial.erase("MASTER_PORT");
  partial.erase("WORLD_SIZE");
  EXPECT_EQ(testing::error_of([&] { env_of(partial); }),
            "torchrun's environment is incomplete: WORLD_SIZE, MASTER_PORT not set (a distributed "
            "run needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; launch with torchrun "
            "--no-python)");
  Env rank_too_big = kTorchrunRank1;
  rank_too_big["RANK"] = "4";
  EXPECT_EQ(testing::error_of([&] { env_of(rank_too_big); }),
            "RANK='4': expected an integer in 0..3 (set by torchrun)");
  Env bad_port = kTorchrunRank1;
  bad_port["MASTER_PORT"] = "29500x";
  EXPECT_EQ(testing::error_of([&] { env_of(bad_port); }),
            "MASTER_PORT='29500x': expected an integer in 1..65535 (set by torchrun)");
}

TEST(DistributedBackendTest, AutoIsGlooOnTheCpuAndNcclNeedsCuda) {
  EXPECT_EQ(choose_backend(DistBackend::kAuto, c10::kCPU), DistBackend::kGloo);
  EXPECT_EQ(choose_backend(DistBackend::kGloo, c10::kCPU), DistBackend::kGloo);
  EXPECT_EQ(testing::error_of([] { choose_backend(DistBackend::kNccl, c10::kCPU); }),
            "train.dist_backend nccl needs a CUDA device, and this run is on cpu (use gloo, or "
            "auto)");
}

// Ranks that meet on loopback bind Gloo there, so a machine whose hostname
// does not resolve needs no GLOO_SOCKET_IFNAME; an interface named in it wins.
TEST(GlooBindingTest, LoopbackMastersBindToTheirAddressAndTheInterfaceWins) {
  for (const std::string address : {"127.0.0.1", "127.0.1.1", "localhost", "::1"}) {
    const GlooBinding b = gloo_binding(address, "");
    EXPECT_EQ(b.kind, GlooBinding::kAddress) << address;
    EXPECT_EQ(b.name, address);
  }
  EXPECT_EQ(gloo_binding("[::1]", "").name, "::1");
  EXPECT_EQ(gloo_binding("node0", "").kind, GlooBinding::kHostname);
  EXPECT_EQ(gloo_binding("10.0.0.7", "").kind, GlooBinding::kHostname);
  EXPECT_EQ(gloo_binding("128.0.0.1", "").kind, GlooBinding::kHostname);
  const GlooBinding named = gloo_binding("127.0.0.1", "eth0");
  EXPECT_EQ(named.kind, GlooBinding::kInterface);
  EXPECT_EQ(named.name, "eth0");
}

TEST(ProcessGroupTest, AveragesGradientsInBucketsAndBroadcasts) {
  run_ranks(2, [](int rank, ProcessGroup& group) {
    EXPECT_EQ(group.world_size(), 2);
    EXPECT_EQ(group.is_main(), rank == 0);
    // 10 floats in buckets of 12 bytes (3 floats): 4 buckets, the last short.
    auto flat = torch::arange(10, torch::kFloat) * float(rank + 1);  // rank 0: i, rank 1: 2i
    group.average_gradients(flat, /*bucket_bytes=*/12);
    EXPECT_TRUE(torch::equal(flat, torch::arange(10, torch::kFloat) * 1.5f)) << flat;
    auto sum = torch::tensor({double(rank), 1.0}, torch::kDouble);
    group.all_reduce_sum(sum, "test");
    EXPECT_TRUE(torch::equal(sum, torch::tensor({1.0, 2.0}, torch::kDouble)));
    auto value = torch::full({3}, rank == 0 ? 7 : -1, torch::kInt64);
    group.broadcast_from_main(value, "test");
    EXPECT_TRUE(torch::equal(value, torch::full({3}, 7, torch::kInt64)));
    group.require_same(42, "the answer");
  });
}

TEST(ProcessGroupTest, DifferentValuesFailOnEveryRank) {
  run_ranks(2, [](int rank, ProcessGroup& group) {
    EXPECT_EQ(testing::error_of([&] { group.require_same(rank == 0 ? 1 : 2, "the config"); }),
              "rank " + std::to_string(rank) +
                  " of 2: the config differs between the ranks (1 rank(s) disagree with rank 0); "
                  "every rank must run the same command");
  });
}

// A peer that dies closes its sockets; the next write to them must fail with
// EPIPE and throw a named error, not end this rank with SIGPIPE (exit 141, as
// CI once saw in DistributedTrain.ARankThatDiesEndsTheOtherWithAnError).
TEST(ProcessGroupTest, JoiningLetsAWriteToADeadPeerThrowInsteadOfKillingTheRank) {
  std::signal(SIGPIPE, SIG_DFL);
  run_ranks(2, [](int, ProcessGroup&) {});
  struct sigaction now = {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
}

// Image i is filled with the value i, so a batch's rows name their images.
data::Dataset numbered_dataset(int64_t n) {
  data::Dataset d;
  d.images = torch::arange(n, torch::kInt64)
                 .to(torch::kUInt8)
                 .view({n, 1, 1, 1})
                 .expand({n, 1, 4, 4})
                 .contiguous();
  d.labels = torch::arange(n, torch::kInt64) % 3;
  d.classes = {"a", "b", "c"};
  d.source = "numbered";
  return d;
}

TEST(ShardedLoaderTest, RanksSplitEachGlobalBatchWithOneProcesssAugmentation) {
  const auto dataset = numbered_dataset(40);
  data::LoaderOptions options;
  options.batch_size = 12;
  options.seed = 5;
  options.mean = {0.0};
  options.std = {1.0};
  options.augment.crop_padding = 1;
  options.augment.hflip = true;
  const data::BatchLoader alone(dataset, options);
  std::vector<std::unique_ptr<data::BatchLoader>> ranks;
  for (int64_t r = 0; r < 3; ++r) {
    auto o = options;
    o.shard_index = r;
    o.shard_count = 3;
    ranks.push_back(std::make_unique<data::BatchLoader>(dataset, o));
  }
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < alone.batches_per_epoch(); ++step) {
      const auto whole = alone.batch(epoch, step);
      std::vector<torch::Tensor> images, labels;
      for (auto& r : ranks) {
        const auto part = r->batch(epoch, step);
        EXPECT_EQ(part.labels.size(0), 4);
        images.push_back(part.images);
        labels.push_back(part.labels);
      }
      // The ranks' rows, in rank order, are the one-process batch, augmentation included.
      EXPECT_TRUE(torch::equal(torch::cat(images), whole.images));
      EXPECT_TRUE(torch::equal(torch::cat(labels), whole.labels));
      const auto order = alone.order(epoch).slice(0, step * 12, (step + 1) * 12);
      for (int64_t i = 0; i < 12; ++i)
        seen.push_back(order[i].item<int64_t>());
    }
    // Disjoint, and together the epoch (40 images: 3 batches of 12, 4 dropped).
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
    EXPECT_EQ(seen.size(), 36u);
  }
  auto uneven = options;
  uneven.shard_count = 5;
  EXPECT_EQ(testing::error_of([&] { data::BatchLoader(dataset, uneven); }),
            "train.batch_size 12 is not divisible by the 5 ranks (WORLD_SIZE): train.batch_size "
            "is the global batch, which the ranks split evenly");
}

TEST(DistributedEvaluationTest, RanksShareOfASplitCombinesToTheWholeSplitsResult) {
  torch::manual_seed(0);
  ModelConfig m;
  m.image_size = 4;
  m.patch_size = 2;
  m.channels = 1;
  m.num_classes = 3;
  m.dim = 8;
  m.depth = 1;
  m.heads = 2;
  m.mlp_dim = 16;
  VisionTransformer model(m);
  const auto dataset = numbered_dataset(37);
  data::LoaderOptions options;
  options.batch_size = 8;
  options.train = false;
  options.mean = {20.0 / 255};
  options.std = {10.0 / 255};
  const EvalResult whole =
      evaluate(model, data::BatchLoader(dataset, options), 3, Precision::kFp32);
  std::vector<EvalResult> combined(2);
  run_ranks(2, [&](int rank, ProcessGroup& group) {
    const int64_t begin = 37 * rank / 2, end = 37 * (rank + 1) / 2;
    const auto share = dataset.subset(torch::arange(begin, end, torch::kInt64));
    VisionTransformer copy(m);
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < model->parameters().size(); ++i)
      copy->parameters()[i].copy_(model->parameters()[i]);
    combined[rank] = combine_across_ranks(
        evaluate(copy, data::BatchLoader(share, options), 3, Precision::kFp32), group);
  });
  for (const auto& r : combined) {
    EXPECT_EQ(r.count, 37);
    EXPECT_DOUBLE_EQ(r.accuracy, whole.accuracy);
    EXPECT_NEAR(r.loss, whole.loss, 1e-6);
    EXPECT_TRUE(torch::equal(r.confusion, whole.confusion));
    EXPECT_TRUE(torch::allclose(r.per_class_accuracy, whole.per_class_accuracy));
  }
}

}  // namespace
}  // namespace vit
