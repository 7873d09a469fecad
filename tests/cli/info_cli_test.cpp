// vit info on a config file, a checkpoint, or a timm file plus its config.
#include "commands/cmd_info.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "vit/cpu_isa.hpp"
#include "vit/error.hpp"
#include "vit/train/memory_estimate.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_layout.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;

// Runs `vit info ARGS --json` in-process and parses what it prints.
nlohmann::json info_json(std::vector<std::string> args) {
  Cli cli;
  register_info(cli);
  args.insert(args.begin(), "info");
  args.push_back("--json");
  cli.parse(args);
  ::testing::internal::CaptureStdout();
  int status = -1;
  try {
    status = cli.run();
  } catch (...) {
    ::testing::internal::GetCapturedStdout();  // end the capture before the error propagates
    throw;
  }
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  return nlohmann::json::parse(out);
}

// info runs no model, but checks --device like every other command
// (apply_common_options does it for all of them).
TEST(Info, ChecksTheDevice) {
  const std::string config = std::string(VIT_SOURCE_DIR) + "/configs/fashion-mnist.json";
  EXPECT_EQ(testing::error_of([&] {
              info_json({"--config", config, "--device", "tpu"});
            }),
            "--device 'tpu': expected auto | cpu | cuda | cuda:N");
  EXPECT_EQ(info_json({"--config", config, "--device", "cpu"})["parameters"],
            count_parameters(load_config(config).model));
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA is available here";
  EXPECT_EQ(testing::error_of([&] {
              info_json({"--config", config, "--device", "cuda"});
            }),
            "--device cuda: CUDA is not available (this LibTorch build or machine has no GPU); "
            "use --device cpu");
}

// The machine's side: what train.precision becomes here, and the CPU's
// instruction set as vit may use it (VIT_CPU_ISA included).
TEST(Info, PrintsThePrecisionAndTheCpuIsaOfThisMachine) {
  const std::string config = std::string(VIT_SOURCE_DIR) + "/configs/fashion-mnist.json";
  const auto automatic = info_json({"--config", config, "--device", "cpu"});
  EXPECT_EQ(automatic["precision"], cpu_computes_bf16(cpu_isa()) ? "bf16" : "fp32");
  EXPECT_EQ(automatic["cpu_isa"], cpu_isa_name(cpu_isa()));
  EXPECT_EQ(info_json({"--config", config, "--device", "cpu", "--set",
                       "train.precision=fp32"})["precision"],
            "fp32");
  // fp16 cannot run on a CPU: no precision, and info still describes the model.
  const auto fp16 =
      info_json({"--config", config, "--device", "cpu", "--set", "train.precision=fp16"});
  EXPECT_TRUE(fp16["precision"].is_null());
  EXPECT_EQ(fp16["parameters"], count_parameters(load_config(config).model));
}

TEST(Info, TheImageNetPresetMatchesTimmVitBasePatch16) {
  const auto j =
      info_json({"--config", std::string(VIT_SOURCE_DIR) + "/configs/vit-base-patch16-224.json"});
  EXPECT_EQ(j["parameters"], 86'567'656);  // timm's vit_base_patch16_224
  EXPECT_EQ(j["dim"], 768);
  EXPECT_EQ(j["depth"], 12);
  EXPECT_EQ(j["heads"], 12);
  EXPECT_EQ(j["mlp_dim"], 3072);
  EXPECT_EQ(j["tokens"], 197);
  EXPECT_EQ(j["pool"], "cls");
  EXPECT_EQ(j["qkv_bias"], true);
  EXPECT_EQ(j["num_classes"], 1000);
  const Config c = load_config(std::string(VIT_SOURCE_DIR) + "/configs/vit-base-patch16-224.json");
  EXPECT_EQ(c.model.layer_norm_eps, 1e-6);
  EXPECT_EQ(c.data.mean, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(c.data.std, (std::vector<double>{0.5, 0.5, 0.5}));
}

// The exact parameter counts of the two presets, as timm counts them.
TEST(Info, PrintsTheExactCountsOfTheTwoPresets) {
  const std::string configs = std::string(VIT_SOURCE_DIR) + "/configs/";
  const auto tiny = info_json({"--config", configs + "vit-tiny.json"});  // the second seed's
  EXPECT_EQ(tiny["parameters"], 8'470'026);
  EXPECT_EQ(tiny["dim"], 512);
  EXPECT_EQ(tiny["depth"], 4);
  EXPECT_EQ(tiny["heads"], 8);
  EXPECT_EQ(tiny["mlp_dim"], 1024);
  EXPECT_EQ(tiny["tokens"], 65);
  EXPECT_EQ(tiny["qkv_bias"], false);
  const auto base = info_json(
      {"--config", configs + "vit-base-patch16-224.json", "--set", "model.qkv_bias=false"});
  EXPECT_EQ(base["parameters"], 86'540'008);
  EXPECT_EQ(base["qkv_bias"], false);
}

// --batch: the step's memory as the library estimates it, part by part in
// MiB, at the config's accumulation and precision (fp32 by --set here, so the
// figures hold on any CPU), with checkpointing's saving beside it.
TEST(Info, EstimatesAStepsMemoryAtTheBatchGiven) {
  const std::string config = std::string(VIT_SOURCE_DIR) + "/configs/imagenet-vit-s16.json";
  const auto j =
      info_json({"--config", config, "--device", "cpu", "--batch", "256", "--set",
                 "train.accum_steps=4", "--set", "train.precision=fp32"})["memory_estimate"];
  Config c = load_config(config, {"train.accum_steps=4", "train.precision=fp32"});
  const MemoryEstimate e = estimate_step_memory(c, 256, {Precision::kFp32, /*cuda=*/false});
  const auto mib = [](int64_t bytes) { return double(bytes) / (1 << 20); };
  EXPECT_EQ(j["batch"], 256);
  EXPECT_EQ(j["micro_batch"], 64);
  EXPECT_EQ(j["accum_steps"], 4);
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["grad_checkpointing"], 0);
  for (const char* part : {"runtime", "weights", "gradients", "optimizer", "low_precision_weights",
                           "ema", "images", "activations", "recompute", "backward", "heap"})
    EXPECT_DOUBLE_EQ(j[std::string(part) + "_mib"].get<double>(), mib(e.bytes_of(part))) << part;
  // ViT-S/16's 22,050,664 parameters, and one micro-batch's 64 images of
  // 3x224x224 fp32 (the step asks for the micro-batches one at a time).
  EXPECT_DOUBLE_EQ(j["weights_mib"].get<double>(), 22'050'664 * 4 / 1048576.0);
  EXPECT_DOUBLE_EQ(j["images_mib"].get<double>(), 64 * 3 * 224 * 224 * 4 / 1048576.0);
  EXPECT_DOUBLE_EQ(j["total_mib"].get<double>(), mib(e.total_bytes()));
  EXPECT_DOUBLE_EQ(j["total_without_checkpointing_mib"].get<double>(), mib(e.total_bytes()));
  c.train.grad_checkpointing.every = 1;
  EXPECT_DOUBLE_EQ(j["total_with_checkpointing_mib"].get<double>(),
                   mib(estimate_step_memory(c, 256, {Precision::kFp32, false}).total_bytes()));
  EXPECT_EQ(j["with_checkpointing_every"], 1);
  EXPECT_LT(j["total_with_checkpointing_mib"].get<double>(), j["total_mib"].get<double>() / 2);
}

// Without --batch, the config's own train.batch_size (1024 for the DeiT
// recipe, as 4 x 256 here).
TEST(Info, EstimatesAtTheConfigsBatchWithoutBatch) {
  const std::string config = std::string(VIT_SOURCE_DIR) + "/configs/imagenet-vit-s16.json";
  const auto j =
      info_json({"--config", config, "--device", "cpu", "--set", "train.accum_steps=4", "--set",
                 "train.grad_checkpointing=2", "--set", "train.precision=fp32"})["memory_estimate"];
  EXPECT_EQ(j["batch"], 1024);
  EXPECT_EQ(j["micro_batch"], 256);
  EXPECT_EQ(j["grad_checkpointing"], 2);
  EXPECT_EQ(j["with_checkpointing_every"], 2);
  EXPECT_DOUBLE_EQ(j["total_with_checkpointing_mib"].get<double>(), j["total_mib"].get<double>());
  EXPECT_GT(j["total_without_checkpointing_mib"].get<double>(), j["total_mib"].get<double>());
}

TEST(Info, RefusesABatchThatCannotBeStepped) {
  const std::string config = std::string(VIT_SOURCE_DIR) + "/configs/imagenet-vit-s16.json";
  EXPECT_EQ(testing::error_of([&] {
              info_json({"--config", config, "--batch", "0"});
            }),
            "batch 0: expected at least 1 image per optimizer step");
  EXPECT_EQ(testing::error_of([&] {
              info_json({"--config", config, "--batch", "-64"});
            }),
            "batch -64: expected at least 1 image per optimizer step");
  EXPECT_EQ(testing::error_of([&] {
              info_json({"--config", config, "--batch", "100", "--set", "train.accum_steps=8"});
            }),
            "batch 100: train.accum_steps 8 does not divide it (each of the 8 micro-batches must "
            "have the same number of images)");
}

// The binary itself: the text lists the parts and both totals; bad input is
// one error line and a non-zero exit.
TEST(Info, TheBinaryPrintsTheEstimateAndFailsOnABadBatch) {
  const fs::path log = fs::temp_directory_path() / ("vit_info_batch_" + std::to_string(::getpid()));
  const auto run = [&](const std::string& args, std::string& output) {
    const std::string command = std::string("'") + VIT_BINARY + "' info --config '" +
                                VIT_SOURCE_DIR + "/configs/imagenet-vit-s16.json' --device cpu " +
                                args + " > '" + log.string() + "' 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream in(log);
    output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string out;
  ASSERT_EQ(run("--batch 64 --set train.precision=fp32", out), 0) << out;
  EXPECT_NE(out.find("memory     one training step, estimated: batch 64 (1 x 64 images), fp32, "
                     "checkpointing off"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("weights (fp32)"), std::string::npos) << out;
  EXPECT_NE(out.find("total with checkpointing (every block)"), std::string::npos) << out;
  EXPECT_EQ(run("--batch 0", out), 1);
  EXPECT_NE(out.find("batch 0: expected at least 1 image per optimizer step"), std::string::npos)
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  fs::remove(log);
}

class InfoCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_info_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_.name = "small";
    config_.model.image_size = 8;
    config_.model.patch_size = 2;
    config_.model.num_classes = 2;
    config_.model.dim = 8;
    config_.model.depth = 1;
    config_.model.heads = 2;
    config_.model.mlp_dim = 12;
    model_ = VisionTransformer(config_.model);
    config_path_ = (dir_ / "small.json").string();
    std::ofstream(config_path_) << config_to_json_string(config_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  Config config_;
  std::string config_path_;
  VisionTransformer model_{nullptr};
};

TEST_F(InfoCheckpoint, DescribesAnExportWithItsClassNames) {
  const std::string file = (dir_ / "m.safetensors").string();
  save_safetensors_weights(file, model_, config_, {"yes", "no"});
  const auto j = info_json({"--checkpoint", file});
  // patch 8*3*2*2+8, cls 8, pos 17*8, block (norms 2*16, qkv 8*24+24, proj 8*8+8,
  // fc1 8*12+12, fc2 12*8+8), norm 16, head 8*2+2: 814
  EXPECT_EQ(j["parameters"], 104 + 8 + 136 + 32 + 216 + 72 + 108 + 104 + 16 + 18);
  EXPECT_EQ(j["checkpoint"], file);
  EXPECT_EQ(j["class_names"], (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(j["name"], "small");
}

TEST_F(InfoCheckpoint, APlainTimmFileNeedsItsConfig) {
  const std::string file = (dir_ / "timm.safetensors").string();
  write_safetensors(file, state_tensors(model_));
  const auto j = info_json({"--checkpoint", file, "--config", config_path_});
  EXPECT_EQ(j["parameters"], 814);
  EXPECT_EQ(j["class_names"], (std::vector<std::string>{"0", "1"}));
  try {
    info_json({"--checkpoint", file});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass --config FILE"), std::string::npos) << e.what();
  }
}

TEST_F(InfoCheckpoint, SetCannotChangeACheckpoint) {
  const std::string file = (dir_ / "m.safetensors").string();
  save_safetensors_weights(file, model_, config_);
  try {
    info_json({"--checkpoint", file, "--set", "model.depth=3"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--set changes a --config file; it cannot change the checkpoint " + file);
  }
}

}  // namespace
}  // namespace vit::cli
