// Crash torture of the checkpoint writer. A child process trains a small model
// and saves best.pt and last.pt through save_training_checkpoint after every
// step (resuming from last.pt, as `vit train --resume` does); the parent kills
// it with SIGKILL at random moments, or lets every write hit a file-size limit
// (a full disk: RLIMIT_FSIZE with SIGXFSZ ignored gives EFBIG), and then
// requires each file to be either absent or a checkpoint that loads, evaluates
// and resumes. Never damaged.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "synthetic.hpp"
#include "vit/error.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

// Child exit codes (the parent's SIGKILL usually comes first).
constexpr int kSavesAllFailedCleanly = 0;
constexpr int kUnexpectedError = 3;
constexpr int kResumeFailed = 4;
constexpr int kSaveSucceededPastLimit = 5;

Config torture_config() {
  Config c = testing::texture_config();
  c.model.dim = 48;  // ~60k parameters: a 1 MB file with AdamW's moments, so kills land mid-write
  c.model.depth = 2;
  c.model.mlp_dim = 96;
  c.validate();
  return c;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("vit-torture-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Trains and saves until killed. With `saves` > 0, stops after that many save
// attempts and exits kSavesAllFailedCleanly if every one threw a vit::Error.
[[noreturn]] void child(const fs::path& dir, int saves) {
  int code = kUnexpectedError;
  try {
    at::set_num_threads(1);
    const Config c = torture_config();
    VisionTransformer model(c.model);
    auto optimizer = make_optimizer(model, c.train);
    CheckpointMeta meta;
    meta.config = c;
    meta.class_names = {"rows", "columns", "checkers", "flat"};
    const std::string last = (dir / "last.pt").string(), best = (dir / "best.pt").string();
    if (fs::exists(last)) {
      try {
        meta = restore_training_checkpoint(last, model, *optimizer);
      } catch (const Error&) {
        ::_exit(kResumeFailed);
      }
    }
    const auto data = testing::texture_dataset(16, 7);
    const auto x = data.images.to(torch::kFloat).div(255);
    for (int attempt = 0; saves == 0 || attempt < saves; ++attempt) {
      optimizer->zero_grad();
      torch::nn::functional::cross_entropy(model->forward(x), data.labels).backward();
      optimizer->step(1e-3);
      ++meta.step;
      try {
        save_training_checkpoint(last, model, *optimizer, meta);
        if (meta.step % 2 == 0) save_training_checkpoint(best, model, *optimizer, meta);
        if (saves > 0) ::_exit(kSaveSucceededPastLimit);
      } catch (const Error& e) {
        if (saves == 0 || std::string(e.what()).find(last) != 0) ::_exit(kUnexpectedError);
      }
    }
    code = kSavesAllFailedCleanly;
  } catch (...) {
    code = kUnexpectedError;
  }
  ::_exit(code);
}

pid_t start_child(const fs::path& dir, int saves, rlim_t file_size_limit) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (file_size_limit != RLIM_INFINITY) {
      ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
      const rlimit limit{file_size_limit, file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    child(dir, saves);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Absent, or whole: loads for inference and gives finite logits, and resumes
// training. Returns the step it holds (0 when absent).
int64_t expect_whole_or_absent(const fs::path& file) {
  if (!fs::exists(file)) return 0;
  const std::string path = file.string();
  try {
    LoadedModel loaded = load_model(path);
    torch::NoGradGuard no_grad;
    const auto logits = loaded.model->forward(torch::rand({2, 1, 8, 8}));
    EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 4})) << path;
    EXPECT_TRUE(torch::isfinite(logits).all().item<bool>()) << path;
    VisionTransformer model(loaded.config.model);
    auto optimizer = make_optimizer(model, loaded.config.train);
    return restore_training_checkpoint(path, model, *optimizer).step;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "damaged checkpoint " << path << ": " << e.what();
    return -1;
  }
}

std::vector<fs::path> temp_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      out.push_back(entry.path());
  }
  return out;
}

std::string bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(CheckpointTorture, SigkillAtFiftyRandomMomentsNeverLeavesADamagedFile) {
  at::set_num_threads(1);
  const fs::path dir = fresh_dir("kill");
  std::mt19937 rng(19);
  std::uniform_int_distribution<int> delay_ms(0, 120);
  int64_t last_step = 0, killed_mid_write = 0;
  for (int round = 0; round < 50; ++round) {
    const pid_t pid = start_child(dir, /*saves=*/0, RLIM_INFINITY);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    ::kill(pid, SIGKILL);
    const int status = wait_for(pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "round " << round << ": the child exited with code "
                                     << WEXITSTATUS(status) << " before the kill";
    // A kill mid-write leaves the temporary file, never a damaged target.
    const auto temps = temp_files(dir);
    killed_mid_write += temps.empty() ? 0 : 1;
    for (const auto& t : temps)
      fs::remove(t);
    expect_whole_or_absent(dir / "best.pt");
    const int64_t step = expect_whole_or_absent(dir / "last.pt");
    // A renamed file is durable: the next run resumes from it, never from less.
    EXPECT_GE(step, last_step) << "round " << round;
    last_step = std::max(last_step, step);
    if (HasFailure()) break;
  }
  EXPECT_GT(last_step, 0) << "no checkpoint was ever written";
  RecordProperty("kills_mid_write", static_cast<int>(killed_mid_write));
  RecordProperty("steps_saved", static_cast<int>(last_step));
  fs::remove_all(dir);
}

TEST(CheckpointTorture, AFullDiskLeavesTheLastGoodFilesAndNoTemporaryFile) {
  at::set_num_threads(1);
  const fs::path dir = fresh_dir("full");
  // Good files first: one child that saves until both exist.
  const pid_t first = start_child(dir, /*saves=*/0, RLIM_INFINITY);
  ASSERT_GT(first, 0);
  for (int i = 0; i < 600 && !(fs::exists(dir / "best.pt") && fs::exists(dir / "last.pt")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(first, SIGKILL);
  wait_for(first);
  for (const auto& t : temp_files(dir))
    fs::remove(t);
  ASSERT_TRUE(fs::exists(dir / "best.pt") && fs::exists(dir / "last.pt"));
  const std::string best = bytes_of(dir / "best.pt"), last = bytes_of(dir / "last.pt");
  ASSERT_GT(expect_whole_or_absent(dir / "last.pt"), 0);

  std::mt19937 rng(91);
  // Below the size of any checkpoint of this model, so that every save fails.
  std::uniform_int_distribution<rlim_t> limit(0, last.size() * 9 / 10);
  for (int round = 0; round < 10; ++round) {
    const pid_t pid = start_child(dir, /*saves=*/3, limit(rng));
    ASSERT_GT(pid, 0);
    const int status = wait_for(pid);
    ASSERT_TRUE(WIFEXITED(status))
        << "round " << round << ": the child died of signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), kSavesAllFailedCleanly)
        << "round " << round << " (3: an error other than a vit::Error naming the file, "
        << "4: could not resume, 5: a save succeeded past the limit)";
    EXPECT_TRUE(temp_files(dir).empty())
        << "round " << round << ": a failed save left its temp file";
    EXPECT_EQ(bytes_of(dir / "best.pt"), best) << "round " << round;
    EXPECT_EQ(bytes_of(dir / "last.pt"), last) << "round " << round;
    if (HasFailure()) break;
  }
  expect_whole_or_absent(dir / "best.pt");
  expect_whole_or_absent(dir / "last.pt");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vit
