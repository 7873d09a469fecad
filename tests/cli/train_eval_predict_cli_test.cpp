// End to end: `vit train` as a process (run folder, runs/latest, resume
// through runs/latest), then `vit eval` and `vit predict` on the same images,
// which must agree image by image.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/cpu_isa.hpp"
#include "vit/io/image_io.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::run_vit;

// The pixels write_block_cifar gives test record i (label i % 10), as (3, 32, 32).
torch::Tensor block_cifar_image(int i) {
  auto image = torch::empty({3, 32, 32}, torch::kUInt8);
  auto a = image.accessor<uint8_t, 3>();
  const int label = i % 10;
  for (int channel = 0; channel < 3; ++channel)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        const bool block = y / 8 == label / 4 && x / 8 == label % 4;
        a[channel][y][x] =
            static_cast<uint8_t>(block ? 220 : 20 + 10 * channel + (i * 7 + x + y) % 30);
      }
  return image;
}

class TrainEvalPredict : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_train_eval_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    // 32-pixel images, so eval reads the records and predict reads the PNGs
    // without any resizing in between.
    Config c = testing::block_config(dir_ / "cifar");
    c.model.image_size = 32;
    c.model.patch_size = 8;
    c.train.precision = Precision::kBf16;  // the final test, eval and predict all run in bf16
    std::ofstream(dir_ / "blocks.json") << config_to_json_string(c);
    const std::string command =
        "cd '" + dir_.string() + "' && '" + VIT_BINARY +
        "' train --config blocks.json --set train.log_every_s=0.001 --device cpu --threads 1 "
        "-q 2> train.err";
    train_status_ = std::system(command.c_str());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static inline fs::path dir_;
  static inline int train_status_ = -1;
};

TEST_F(TrainEvalPredict, TrainWritesTheRunFolderAndPointsLatestAtIt) {
  ASSERT_EQ(train_status_, 0) << "vit train failed; see " << (dir_ / "train.err");
  const fs::path latest = dir_ / "runs" / "latest";
  ASSERT_TRUE(fs::is_symlink(latest));
  const fs::path run = fs::canonical(latest);
  EXPECT_EQ(run.parent_path(), fs::canonical(dir_ / "runs"));
  EXPECT_EQ(run.filename().string().rfind("blocks-", 0), 0u) << run;
  for (const char* name : {"config.json", "metrics.jsonl", "metrics.csv", "best.pt", "last.pt",
                           "train.log", "curves.png", "summary.json"})
    EXPECT_TRUE(fs::is_regular_file(run / name)) << name;
  const auto summary = read_json(run / "summary.json");
  EXPECT_EQ(summary["stop_reason"], "epochs done");
  EXPECT_EQ(summary["steps"], 2 * 5);  // 80 training images after the 20 held out, batch 16
  EXPECT_EQ(summary["test_images"], 10);
  // -q quiets the terminal, not the run's own log.
  const auto log = testing::read_lines(run / "train.log");
  const auto validations = std::count_if(log.begin(), log.end(), [](const std::string& line) {
    return line.find("| val loss") != std::string::npos;
  });
  EXPECT_EQ(validations, 2);
  // Progress is for a person at the terminal: under -q none is drawn or logged.
  for (const auto& line : log)
    EXPECT_EQ(line.find(" eta "), std::string::npos) << line;
  ASSERT_FALSE(log.empty());
  // The run's line, after the data's: the precision is the trainer's own choice.
  EXPECT_EQ(std::count_if(log.begin(), log.end(),
                          [](const std::string& line) {
                            return line.find(" on cpu (1 thread), precision bf16") !=
                                   std::string::npos;
                          }),
            1)
      << log.front();
  EXPECT_EQ(summary["precision"], "bf16");
  EXPECT_EQ(summary["cpu_isa"], cpu_isa_name(cpu_isa()));
  // Neither validations nor progress lines (due every millisecond) reach it;
  // only the warning that bf16 is emulated, on a CPU without bf16 instructions.
  const auto errors = testing::read_lines(dir_ / "train.err");
  ASSERT_EQ(errors.size(), cpu_computes_bf16(cpu_isa()) ? 0u : 1u);
  for (const auto& line : errors)
    EXPECT_NE(line.find("[warning] precision bf16: this CPU has no bf16 instructions ("),
              std::string::npos)
        << line;
}

// The python of the virtual environment with the tensorboard package that
// scripts/setup.sh --python-check makes: $VIT_TENSORBOARD_VENV, or
// ~/.cache/vit/tensorboard.
std::string tensorboard_python() {
  if (const char* venv = std::getenv("VIT_TENSORBOARD_VENV"))
    return std::string(venv) + "/bin/python";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/vit/tensorboard/bin/python";
}

TEST_F(TrainEvalPredict, TensorBoardReadsTheRunsEvents) {
  ASSERT_EQ(train_status_, 0) << "vit train failed; see " << (dir_ / "train.err");
  const fs::path run = fs::canonical(dir_ / "runs" / "latest");
  EXPECT_EQ(testing::events_files_in(run), 1);
  const std::string python = tensorboard_python();
  if (std::system(("'" + python + "' -c 'import tensorboard' 2>/dev/null").c_str()) != 0) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true")
      FAIL() << python << " cannot import tensorboard, and CI must read the events back "
             << "(scripts/setup.sh --python-check installs it)";
    GTEST_SKIP() << python << " cannot import tensorboard (scripts/setup.sh --python-check)";
  }
  const std::string script = std::string(VIT_SOURCE_DIR) + "/tests/pycheck/check_tensorboard.py";
  const fs::path log = dir_ / "tensorboard.txt";
  const std::string command =
      "'" + python + "' '" + script + "' '" + run.string() + "' > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::cout << output;
  EXPECT_EQ(status, 0) << output;
}

// In a folder of its own: the run would point the suite's runs/latest at
// itself, and the tests after it in the same process resume through that link.
TEST_F(TrainEvalPredict, NoEventsWithTensorBoardOff) {
  const fs::path work = dir_ / "quiet";
  fs::create_directories(work);
  const std::string command = "cd '" + work.string() + "' && '" + VIT_BINARY +
                              "' train --config ../blocks.json --set train.tensorboard=false "
                              "--set train.epochs=1 --out quiet_run --device cpu --threads 1 "
                              "-q 2> quiet.err";
  ASSERT_EQ(std::system(command.c_str()), 0) << "see " << (work / "quiet.err");
  EXPECT_EQ(testing::events_files_in(work / "quiet_run"), 0);
  EXPECT_TRUE(fs::is_regular_file(work / "quiet_run" / "curves.png"));
}

TEST_F(TrainEvalPredict, ResumingThroughLatestKeepsTheLinkAndTheRun) {
  ASSERT_EQ(train_status_, 0);
  const fs::path run = fs::canonical(dir_ / "runs" / "latest");
  const std::string command =
      "cd '" + dir_.string() + "' && '" + VIT_BINARY +
      "' train --resume runs/latest/last.pt --device cpu --threads 1 -q 2> resume.err";
  ASSERT_EQ(std::system(command.c_str()), 0) << "see " << (dir_ / "resume.err");
  EXPECT_EQ(fs::canonical(dir_ / "runs" / "latest"), run);
  EXPECT_EQ(read_json(run / "summary.json")["stop_reason"], "already finished (epochs done)");
  EXPECT_EQ(testing::read_lines(run / "metrics.jsonl").size(), 2u);  // no records were added
  EXPECT_EQ(testing::events_files_in(run), 2);  // the resumed session's own, beside the first
}

// One epoch of blocks.json as a process in `work` (a folder of its own, so the
// suite's runs/latest stays as it is) into --out `out`: the exit status and
// what the command wrote to stderr.
struct Finished {
  int status;
  std::vector<std::string> stderr_lines;
};
Finished train_one_epoch_in(const fs::path& work, const std::string& out) {
  const std::string command = "cd '" + work.string() + "' && '" + VIT_BINARY +
                              "' train --config ../blocks.json --out " + out +
                              " --set train.epochs=1 --device cpu --threads 1 -q 2> train.err";
  const int status = std::system(command.c_str());
  // The fixture trains in bf16, which a CPU without bf16 instructions
  // emulates with a warning (TrainWritesTheRunFolderAndPointsLatestAtIt
  // checks it): the lines here are the ones each test looks for.
  auto lines = testing::read_lines(work / "train.err");
  lines.erase(std::remove_if(lines.begin(), lines.end(),
                             [](const std::string& line) {
                               return line.find(
                                          "[warning] precision bf16: this CPU has no bf16 "
                                          "instructions") != std::string::npos;
                             }),
              lines.end());
  return {status, lines};
}

// With one epoch the last step is the best, and the trainer tests its own
// weights without reading best.pt back: it must still report what eval of
// best.pt does, to the last bit.
TEST_F(TrainEvalPredict, ATestOfTheLastStepsWeightsMatchesEvalOfBestPt) {
  ASSERT_EQ(train_status_, 0);
  const fs::path work = dir_ / "last-is-best";
  fs::create_directories(work);
  ASSERT_EQ(train_one_epoch_in(work, "run").status, 0) << "see " << (work / "train.err");
  const auto summary = read_json(work / "run" / "summary.json");
  ASSERT_EQ(summary["best_step"], summary["steps"]);
  const fs::path out = work / "eval";
  ASSERT_EQ(run_vit({"eval", "--checkpoint", (work / "run" / "best.pt").string(), "--split", "test",
                     "--out", out.string(), "--device", "cpu", "--threads", "1", "-q"}),
            0);
  const auto metrics = read_json(out / "metrics.json");
  EXPECT_EQ(summary["test_images"], metrics["images"]);
  EXPECT_DOUBLE_EQ(summary["test_loss"].get<double>(), metrics["loss"].get<double>());
  EXPECT_DOUBLE_EQ(summary["test_acc"].get<double>(), metrics["accuracy"].get<double>());
}

// A folder named curves.png makes the last step of a finished run fail: the
// command must say so and exit non-zero, and runs/latest must still lead to
// the run's checkpoints.
TEST_F(TrainEvalPredict, AnErrorAfterTrainingStillPointsLatestAtTheRun) {
  ASSERT_EQ(train_status_, 0);
  const fs::path work = dir_ / "failing";
  const fs::path run = work / "runs" / "blocked-curves";
  fs::create_directories(run / "curves.png");
  const auto [status, errors] = train_one_epoch_in(work, "runs/blocked-curves");
  EXPECT_NE(status, 0);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("runs/blocked-curves/curves.png: cannot open for writing"),
            std::string::npos)
      << errors[0];
  ASSERT_TRUE(fs::is_symlink(work / "runs" / "latest"));
  EXPECT_EQ(fs::canonical(work / "runs" / "latest"), fs::canonical(run));
  EXPECT_TRUE(fs::is_regular_file(run / "best.pt"));
  EXPECT_EQ(read_json(run / "summary.json")["stop_reason"], "epochs done");
}

// The run's results are on disk before the link is written, so a link that
// cannot be written (here `runs` is a file) is a warning, not a failed run.
TEST_F(TrainEvalPredict, ALinkThatCannotBeWrittenIsAWarning) {
  ASSERT_EQ(train_status_, 0);
  const fs::path work = dir_ / "no-runs-folder";
  fs::create_directories(work);
  std::ofstream(work / "runs") << "not a folder\n";
  const auto [status, warnings] = train_one_epoch_in(work, "elsewhere");
  ASSERT_EQ(status, 0) << "see " << (work / "train.err");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("runs/latest not updated: runs: cannot create folder ("),
            std::string::npos)
      << warnings[0];
  EXPECT_TRUE(fs::is_regular_file(work / "elsewhere" / "best.pt"));
  EXPECT_TRUE(fs::is_regular_file(work / "runs"));  // left as it was
}

TEST_F(TrainEvalPredict, EvalAndPredictGiveTheSameAnswerForTheSameImage) {
  ASSERT_EQ(train_status_, 0);
  const std::string best = (fs::canonical(dir_ / "runs" / "latest") / "best.pt").string();
  const fs::path out = dir_ / "eval";
  ASSERT_EQ(run_vit({"eval", "--checkpoint", best, "--split", "test", "--out", out.string(),
                     "--device", "cpu", "--threads", "1", "-q"}),
            0);
  const auto metrics = read_json(out / "metrics.json");
  EXPECT_EQ(metrics["precision"], "bf16");  // auto: the checkpoint's training precision
  // The trainer's final test of best.pt ran in the same precision on the same
  // images, so it reports what eval does, to the last bit. (This suite's run
  // is best at step 5 of 10, so its test read best.pt back; the next test
  // has the last step best.)
  const auto summary = read_json(dir_ / "runs" / "latest" / "summary.json");
  EXPECT_EQ(summary["test_precision"], "bf16");
  EXPECT_EQ(summary["test_images"], metrics["images"]);
  EXPECT_DOUBLE_EQ(summary["test_loss"].get<double>(), metrics["loss"].get<double>());
  EXPECT_DOUBLE_EQ(summary["test_acc"].get<double>(), metrics["accuracy"].get<double>());
  EXPECT_TRUE(fs::is_regular_file(out / "confusion.png"));
  EXPECT_TRUE(fs::is_regular_file(out / "worst.png"));
  ASSERT_EQ(metrics["images"], 10);
  ASSERT_EQ(metrics["classes"].size(), 10u);
  EXPECT_TRUE(metrics["per_class_accuracy"].is_object());

  // The test split holds one image of each class, so row k of the confusion
  // matrix names the class eval predicted for the image of class k.
  std::vector<std::string> images;
  for (int i = 0; i < 10; ++i) {
    images.push_back((dir_ / ("test_" + std::to_string(i) + ".png")).string());
    io::write_png(images.back(), block_cifar_image(i));
  }
  std::vector<std::string> args = {"predict", "--checkpoint", best,  "--json",    "--topk",
                                   "1",       "--device",     "cpu", "--threads", "1",
                                   "-q",      "--images"};
  args.insert(args.end(), images.begin(), images.end());
  ::testing::internal::CaptureStdout();
  const int status = run_vit(args);
  const auto predictions = nlohmann::json::parse(::testing::internal::GetCapturedStdout());
  ASSERT_EQ(status, 0);
  ASSERT_EQ(predictions.size(), 10u);

  double loss = 0;
  int correct = 0;
  for (int k = 0; k < 10; ++k) {
    const auto& row = metrics["confusion"][k];
    int eval_class = -1;
    for (int j = 0; j < 10; ++j)
      if (row[j] == 1) eval_class = j;
    const auto& p = predictions[k];
    EXPECT_EQ(p["image"], images[k]);
    EXPECT_EQ(p["top"][0]["index"], eval_class) << "image of class " << k;
    EXPECT_EQ(p["top"][0]["class"], metrics["classes"][eval_class]);
    loss -= std::log(p["probs"][k].get<double>());
    correct += eval_class == k;
  }
  EXPECT_NEAR(loss / 10, metrics["loss"].get<double>(), 1e-5);
  EXPECT_DOUBLE_EQ(correct / 10.0, metrics["accuracy"].get<double>());
}

// predict's logits for one image, as JSON numbers.
nlohmann::json predicted_logits(const std::string& checkpoint, const std::string& image,
                                const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"predict",  "--checkpoint", checkpoint,  "--json",
                                   "--device", "cpu",          "--threads", "1",
                                   "-q",       "--images",     image};
  args.insert(args.end(), extra.begin(), extra.end());
  ::testing::internal::CaptureStdout();
  const int status = run_vit(args);
  const auto out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  return nlohmann::json::parse(out).at(0).at("logits");
}

TEST_F(TrainEvalPredict, PrecisionAutoIsTheTrainingOneAndCanBeOverridden) {
  ASSERT_EQ(train_status_, 0);
  const std::string best = (fs::canonical(dir_ / "runs" / "latest") / "best.pt").string();
  const std::string image = (dir_ / "precision.png").string();
  io::write_png(image, block_cifar_image(3));
  const auto automatic = predicted_logits(best, image, {});
  EXPECT_EQ(automatic, predicted_logits(best, image, {"--precision", "bf16"}));
  const auto fp32 = predicted_logits(best, image, {"--precision", "fp32"});
  ASSERT_EQ(fp32.size(), automatic.size());
  double largest_difference = 0;
  for (size_t k = 0; k < fp32.size(); ++k)
    largest_difference =
        std::max(largest_difference, std::abs(fp32[k].get<double>() - automatic[k].get<double>()));
  // bf16 keeps 8 bits of mantissa: the logits move, but not by much.
  EXPECT_GT(largest_difference, 0.0);
  EXPECT_LT(largest_difference, 0.25);

  EXPECT_EQ(testing::error_of([&] {
              run_vit({"predict", "--checkpoint", best, "--images", image, "--device", "cpu",
                       "--precision", "fp16", "-q"});
            }),
            "--precision fp16 needs a CUDA device (on CPU use bf16)");
  EXPECT_EQ(
      testing::error_of([&] {
        run_vit({"eval", "--checkpoint", best, "--device", "cpu", "--precision", "fp16", "-q"});
      }),
      "--precision fp16 needs a CUDA device (on CPU use bf16)");
}

}  // namespace
}  // namespace vit::cli
