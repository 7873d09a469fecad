// End to end: `vit train` as two ranks of one world, started the way torchrun
// starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), over
// Gloo on loopback; and once under the real torchrun where one of the same
// PyTorch version as this build's LibTorch is installed.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "process.hpp"
#include "trained_checkpoint.hpp"
#include "vit/io/image_io.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::read_json;
using Seconds = std::chrono::seconds;

class DistributedTrain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_distributed_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    // 80 training images, global batch 16: 5 steps an epoch. Crops and flips
    // on, dropout off: two ranks must reproduce one process.
    Config c = testing::block_config(dir_ / "cifar");
    c.data.augment.crop_padding = 2;
    c.data.augment.hflip = true;
    c.train.dist_timeout_s = 20;
    std::ofstream(dir_ / "blocks.json") << config_to_json_string(c);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  void SetUp() override {
    case_dir_ = dir_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(case_dir_);
  }

  // `vit train --config blocks.json ARGS` as rank `rank` of `world`, in
  // `cwd` (default: this test's folder), output to rank<R>.log there.
  std::unique_ptr<ChildProcess> start_rank(int rank, int world, int port,
                                           const std::vector<std::string>& args,
                                           const fs::path& cwd = {}) const {
    std::vector<std::string> argv = {
        VIT_BINARY, "train", "--config",  (dir_ / "blocks.json").string(),
        "--device", "cpu",   "--threads", "1"};
    argv.insert(argv.end(), args.begin(), args.end());
    const fs::path where = cwd.empty() ? case_dir_ : cwd;
    return std::make_unique<ChildProcess>(
        argv,
        std::vector<std::string>{
            "RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(world),
            "LOCAL_RANK=" + std::to_string(rank), "LOCAL_WORLD_SIZE=" + std::to_string(world),
            "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)},
        where, where / ("rank" + std::to_string(rank) + ".log"));
  }

  int train_alone(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {
        VIT_BINARY, "train", "--config",  (dir_ / "blocks.json").string(),
        "--device", "cpu",   "--threads", "1"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess alone(argv, {}, case_dir_, case_dir_ / "alone.log");
    return alone.wait(Seconds(120));
  }

  // Waits until `path` exists and has content (training has begun).
  static bool wait_for_file(const fs::path& path, Seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (fs::exists(path) && fs::file_size(path) > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  static inline fs::path dir_;
  fs::path case_dir_;
};

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void expect_same_weights(const std::string& a, const std::string& b, double tolerance) {
  const auto one = load_model(a).model->named_parameters();
  const auto two = load_model(b).model->named_parameters();
  ASSERT_EQ(one.size(), two.size());
  for (const auto& p : one) {
    const auto diff = (p.value() - two[p.key()]).abs().max().item<double>();
    EXPECT_LT(diff, tolerance) << p.key();
  }
}

TEST_F(DistributedTrain, TwoRanksReproduceOneProcessAndOnlyRankZeroWritesFiles) {
  ASSERT_EQ(train_alone({"--out", "alone", "--set", "train.epochs=2"}), 0)
      << text_of(case_dir_ / "alone.log");
  // Rank 1 runs in a folder of its own with the default run folder: it must
  // leave that folder empty but for its log.
  const fs::path rank1_dir = case_dir_ / "rank1_cwd";
  fs::create_directories(rank1_dir);
  const int port = testing::free_tcp_port();
  auto rank1 = start_rank(1, 2, port, {"--set", "train.epochs=2"}, rank1_dir);
  auto rank0 = start_rank(0, 2, port, {"--out", "two", "--set", "train.epochs=2"});
  ASSERT_EQ(rank0->wait(Seconds(120)), 0) << rank0->output();
  ASSERT_EQ(rank1->wait(Seconds(60)), 0) << rank1->output();

  // Same steps, same batches, same augmentation: the same weights after 10 steps.
  expect_same_weights((case_dir_ / "alone/last.pt").string(), (case_dir_ / "two/last.pt").string(),
                      1e-5);
  const auto alone = read_json(case_dir_ / "alone/summary.json");
  const auto two = read_json(case_dir_ / "two/summary.json");
  EXPECT_EQ(two["steps"], 10);
  EXPECT_EQ(two["best_val_acc"], alone["best_val_acc"]);
  EXPECT_EQ(two["test_acc"], alone["test_acc"]);
  EXPECT_EQ(two["test_images"], 10);  // reduced over both ranks' halves of the test split

  std::vector<std::string> rank1_files;
  for (const auto& entry : fs::directory_iterator(rank1_dir))
    rank1_files.push_back(entry.path().filename().string());
  EXPECT_EQ(rank1_files, std::vector<std::string>{"rank1.log"});
  EXPECT_EQ(testing::events_files_in(case_dir_ / "two"), 1);  // rank 0's, for the world
  EXPECT_EQ(rank1->output(), "");  // rank 1 logs warnings and errors only
  EXPECT_NE(rank0->output().find("rank 0 of 2 (gloo backend"), std::string::npos);
}

// torchrun's ranks on one machine list an image folder once: the first to take
// the list file's lock writes it into data.cache_dir, and both train from the
// mapped file.
TEST_F(DistributedTrain, RanksOnOneMachineShareOneFileList) {
  const fs::path photos = case_dir_ / "photos";
  for (const char* split : {"train", "val"})
    for (int i = 0; i < 16; ++i)
      io::write_png(
          photos / split / ("class" + std::to_string(i % 2)) / (std::to_string(i) + ".png"),
          torch::full({3, 12, 12}, 40 + 150 * (i % 2), torch::kUInt8));
  const fs::path cache = case_dir_ / "cache";
  const std::vector<std::string> folder = {
      "--set", "data.dataset=image-folder", "--set", "data.root=" + photos.string(),
      "--set", "data.stream=true",          "--set", "data.cache_dir=" + cache.string(),
      "--set", "model.num_classes=2",       "--set", "train.epochs=1"};
  const int port = testing::free_tcp_port();
  auto rank1 = start_rank(1, 2, port, folder);
  std::vector<std::string> rank0_args = folder;
  rank0_args.insert(rank0_args.end(), {"--out", "two"});
  auto rank0 = start_rank(0, 2, port, rank0_args);
  ASSERT_EQ(rank0->wait(Seconds(120)), 0) << rank0->output();
  ASSERT_EQ(rank1->wait(Seconds(60)), 0) << rank1->output();
  EXPECT_NE(rank0->output().find("16 train, 16 val, 0 test images, streamed"), std::string::npos)
      << rank0->output();
  EXPECT_NE(rank0->output().find("(its names and labels mapped, shared by this machine's ranks)"),
            std::string::npos)
      << rank0->output();
  int lists = 0;
  for (const auto& entry : fs::directory_iterator(cache))
    lists += entry.path().filename().string().rfind("image-folder-list-", 0) == 0 &&
             entry.path().extension() == ".bin";
  EXPECT_EQ(lists, 1);
}

TEST_F(DistributedTrain, RanksWithDifferentConfigsAreRefused) {
  const int port = testing::free_tcp_port();
  auto rank1 = start_rank(1, 2, port, {"--set", "train.lr=0.002"});
  auto rank0 = start_rank(0, 2, port, {"--out", "run"});
  EXPECT_EQ(rank0->wait(Seconds(60)), 1);
  EXPECT_EQ(rank1->wait(Seconds(60)), 1);
  EXPECT_NE(rank0->output().find("rank 0 of 2: the resolved config (config file, --set, --seed) "
                                 "differs between the ranks"),
            std::string::npos)
      << rank0->output();
  EXPECT_NE(rank1->output().find("[rank 1] [error] rank 1 of 2: the resolved config"),
            std::string::npos)
      << rank1->output();
  EXPECT_FALSE(fs::exists(case_dir_ / "run/last.pt"));
}

TEST_F(DistributedTrain, ARankThatDiesEndsTheOtherWithAnError) {
  const int port = testing::free_tcp_port();
  const std::vector<std::string> args = {"--set", "train.epochs=100000", "--set",
                                         "train.dist_timeout_s=10"};
  auto rank1 = start_rank(1, 2, port, args);
  auto args0 = args;
  args0.insert(args0.end(), {"--out", "run"});
  auto rank0 = start_rank(0, 2, port, args0);
  ASSERT_TRUE(wait_for_file(case_dir_ / "run/metrics.jsonl", Seconds(60))) << rank0->output();
  rank1->signal(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_EQ(rank0->wait(Seconds(60)), 1) << rank0->output();
  // Gloo sees the closed connection at once; the timeout (10 s) bounds it anyway.
  EXPECT_LT(std::chrono::steady_clock::now() - killed, Seconds(30));
  EXPECT_NE(rank0->output().find("rank 0 of 2: "), std::string::npos) << rank0->output();
  EXPECT_NE(rank0->output().find("another rank has probably stopped"), std::string::npos)
      << rank0->output();
  EXPECT_TRUE(fs::exists(case_dir_ / "run/last.pt"));  // the last validation's checkpoint stays
}

TEST_F(DistributedTrain, AStopSignalToOneRankStopsBothAndOneRankResumes) {
  const int port = testing::free_tcp_port();
  const std::vector<std::string> args = {"--set", "train.epochs=150"};  // 750 steps
  auto rank1 = start_rank(1, 2, port, args);
  auto args0 = args;
  args0.insert(args0.end(), {"--out", "run"});
  auto rank0 = start_rank(0, 2, port, args0);
  ASSERT_TRUE(wait_for_file(case_dir_ / "run/metrics.jsonl", Seconds(60))) << rank0->output();
  rank1->signal(SIGTERM);  // to rank 1 only: both stop at the same step
  EXPECT_EQ(rank0->wait(Seconds(60)), 130) << rank0->output();
  EXPECT_EQ(rank1->wait(Seconds(60)), 130) << rank1->output();
  const CheckpointMeta stopped = read_checkpoint_meta((case_dir_ / "run/last.pt").string());
  EXPECT_FALSE(stopped.finished);
  ASSERT_GT(stopped.step, 0);
  ASSERT_LT(stopped.step, 750) << "the run ended before the signal; the test proves nothing";

  // The checkpoint holds nothing of the world it came from: one process goes on.
  ASSERT_EQ(train_alone({"--resume", "run/last.pt", "--set", "train.epochs=150"}), 0)
      << text_of(case_dir_ / "alone.log");
  const auto summary = read_json(case_dir_ / "run/summary.json");
  EXPECT_EQ(summary["steps"], 750);
  EXPECT_EQ(summary["stop_reason"], "epochs done");
  EXPECT_EQ(read_checkpoint_meta((case_dir_ / "run/last.pt").string()).step, 750);
}

// The torchrun of this build's PyTorch version: pip's, in the environment
// that scripts/setup.sh --torch pip makes, when this build is on it.
fs::path matching_torchrun() {
  if (const char* given = std::getenv("VIT_TORCHRUN")) return given;
  const char* home = std::getenv("HOME");
  if (!home) return {};
  const fs::path cache = fs::path(home) / ".cache/vit";
  if (!fs::exists(cache)) return {};
  for (const auto& entry : fs::directory_iterator(cache)) {
    const auto name = entry.path().filename().string();
    // torch-X.Y.Z holds pip's torch X.Y.Z; its torchrun speaks LibTorch X.Y's store protocol.
    if (name.rfind("torch-", 0) != 0) continue;
    const std::string version = name.substr(6);
    if (version.rfind(
            std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + ".",
            0) != 0)
      continue;
    const auto torchrun = entry.path() / "bin/torchrun";
    if (fs::exists(torchrun)) return torchrun;
  }
  return {};
}

TEST_F(DistributedTrain, RunsUnderTheRealTorchrun) {
  const fs::path torchrun = matching_torchrun();
  if (torchrun.empty())
    GTEST_SKIP() << "no torchrun of PyTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR
                 << " (scripts/setup.sh --torch pip installs one for the LibTorch 2.x build; "
                    "Debian's torchrun 1.13 does not start under Python 3.11)";
  ChildProcess run({torchrun.string(), "--no-python", "--nproc-per-node", "2", "--master-port",
                    std::to_string(testing::free_tcp_port()), VIT_BINARY, "train", "--config",
                    (dir_ / "blocks.json").string(), "--device", "cpu", "--out", "run"},
                   {}, case_dir_, case_dir_ / "torchrun.log");
  ASSERT_EQ(run.wait(Seconds(180)), 0) << run.output();
  EXPECT_NE(run.output().find("rank 0 of 2 (gloo backend, 2 on this machine)"), std::string::npos)
      << run.output();
  EXPECT_EQ(read_json(case_dir_ / "run/summary.json")["steps"], 10);
}

}  // namespace
}  // namespace vit::cli
