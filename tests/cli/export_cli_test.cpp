// vit export, and load_model reading what it writes (and plain timm files).
#include "commands/cmd_export.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "vit/error.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;

class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_export_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_.name = "tiny";
    config_.model.image_size = 8;
    config_.model.patch_size = 4;
    config_.model.num_classes = 3;
    config_.model.dim = 8;
    config_.model.depth = 2;
    config_.model.heads = 2;
    config_.model.mlp_dim = 16;
    torch::manual_seed(5);
    model_ = VisionTransformer(config_.model);
    model_->eval();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Our own training checkpoint holding model_.
  std::string save_pt() {
    auto optimizer = make_optimizer(model_, config_.train);
    CheckpointMeta meta;
    meta.config = config_;
    meta.class_names = {"ant", "bee", "cicada"};
    save_training_checkpoint(path("model.pt"), model_, *optimizer, meta);
    return path("model.pt");
  }

  std::string write_config(const std::string& name, const Config& config) {
    std::ofstream(path(name)) << config_to_json_string(config);
    return path(name);
  }

  torch::Tensor logits(VisionTransformer& model) {
    torch::NoGradGuard no_grad;
    return model->forward(torch::linspace(-1, 1, 2 * 3 * 8 * 8).view({2, 3, 8, 8}));
  }

  fs::path dir_;
  Config config_;
  VisionTransformer model_{nullptr};
};

int run_export(const std::vector<std::string>& args) {
  Cli cli;
  register_export(cli);
  std::vector<std::string> full = {"export"};
  full.insert(full.end(), args.begin(), args.end());
  cli.parse(full);
  return cli.run();
}

std::string error_of(const std::vector<std::string>& args) {
  return testing::error_of([&] { run_export(args); });
}

std::string load_error(const std::string& file, const std::optional<std::string>& config = {}) {
  return testing::error_of([&] { load_model(file, config); });
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(Export, WritesTimmNamesAsFloat32WithConfigAndClassNames) {
  const std::string out = path("model.safetensors");
  ASSERT_EQ(run_export({"--checkpoint", save_pt(), "--out", out, "--device", "cpu"}), 0);
  const SafetensorsContents file = read_safetensors(out);
  const auto params = model_->named_parameters();
  ASSERT_EQ(file.tensors.size(), params.size());  // 4 + 2 blocks x 12 + 4 = 32
  EXPECT_EQ(file.tensors.size(), 32u);
  for (const auto& p : params) {
    ASSERT_EQ(file.tensors.count(p.key()), 1u) << p.key();
    EXPECT_EQ(file.tensors.at(p.key()).scalar_type(), torch::kFloat) << p.key();
    EXPECT_TRUE(torch::equal(file.tensors.at(p.key()), p.value())) << p.key();
  }
  EXPECT_EQ(file.tensors.at("blocks.1.attn.qkv.weight").sizes(), (std::vector<int64_t>{24, 8}));
  EXPECT_EQ(file.metadata.at("format"), "pt");
  EXPECT_EQ(file.metadata.at("class_names"), R"(["ant","bee","cicada"])");
  EXPECT_EQ(nlohmann::json::parse(file.metadata.at("vit_config"))["model"]["depth"], 2);
  // The atomic write's temporary file is gone: only model.pt and the export remain.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 2);
}

TEST_F(Export, ReadsBackAsTheSameModel) {
  const std::string out = path("model.safetensors");
  ASSERT_EQ(run_export({"--checkpoint", save_pt(), "--out", out}), 0);
  LoadedModel loaded = load_model(out);
  EXPECT_TRUE(torch::equal(logits(loaded.model), logits(model_)));
  EXPECT_FALSE(loaded.model->is_training());
  EXPECT_EQ(loaded.class_names, (std::vector<std::string>{"ant", "bee", "cicada"}));
  EXPECT_EQ(loaded.config.name, "tiny");
  EXPECT_EQ(loaded.path, out);

  // Exporting the export changes nothing, byte for byte.
  const std::string again = path("again.safetensors");
  ASSERT_EQ(run_export({"--checkpoint", out, "--out", again}), 0);
  EXPECT_EQ(file_bytes(again), file_bytes(out));
}

TEST_F(Export, PlainTimmFileTakesItsArchitectureFromConfig) {
  const std::string timm = path("timm.safetensors");
  write_safetensors(timm, state_tensors(model_));  // no __metadata__, as timm writes it
  EXPECT_EQ(error_of({"--checkpoint", timm, "--out", path("x.safetensors")}),
            timm +
                ": no __metadata__[\"vit_config\"] to give the architecture (a plain timm "
                "file); pass --config FILE, e.g. configs/vit-base-patch16-224.json for "
                "vit_base_patch16_224");

  LoadedModel loaded = load_model(timm, write_config("tiny.json", config_));
  EXPECT_TRUE(torch::equal(logits(loaded.model), logits(model_)));
  EXPECT_EQ(loaded.class_names, (std::vector<std::string>{"0", "1", "2"}));  // indices stand in

  // --config fixes the architecture, so a wrong one fails by tensor name.
  Config wider = config_;
  wider.model.mlp_dim = 32;
  try {
    load_model(timm, write_config("wider.json", wider));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("blocks.0.mlp.fc1.weight: expected [32, 8], file has [16, 8]"),
        std::string::npos)
        << e.what();
  }
}

TEST_F(Export, ConfigThatDisagreesWithTheMetadataIsRefused) {
  const std::string out = path("model.safetensors");
  ASSERT_EQ(run_export({"--checkpoint", save_pt(), "--out", out}), 0);
  Config deeper = config_;
  deeper.model.depth = 3;
  const std::string deeper_path = write_config("deeper.json", deeper);
  EXPECT_EQ(load_error(out, deeper_path),
            out + ": architecture differs from " + deeper_path + " (depth 3 vs 2)");
  Config renamed = config_;  // agreeing on the architecture is enough
  renamed.name = "other";
  EXPECT_EQ(load_model(out, write_config("renamed.json", renamed)).config.name, "tiny");
}

TEST_F(Export, BadClassNamesInTheMetadataAreRefused) {
  const std::string file = path("names.safetensors");
  StringMap metadata = export_metadata(config_, {"only", "two"});
  write_safetensors(file, state_tensors(model_), metadata);
  EXPECT_EQ(load_error(file), file + " __metadata__[\"class_names\"]: 2 names for 3 classes");
  metadata["class_names"] = R"({"0": "cat"})";
  write_safetensors(file, state_tensors(model_), metadata);
  EXPECT_EQ(load_error(file),
            file + " __metadata__[\"class_names\"]: expected a JSON array of strings");
}

TEST_F(Export, BadPathsFailClearlyAndLeaveNothingBehind) {
  const std::string pt = save_pt();
  EXPECT_EQ(error_of({"--checkpoint", pt, "--out", path("m.safetensors"), "--device", "tpu"}),
            "--device 'tpu': expected auto | cpu | cuda | cuda:N");
  EXPECT_EQ(error_of({"--checkpoint", pt, "--out", path("model.bin")}),
            path("model.bin") +
                ": --out must end in .safetensors (vit export writes the safetensors format)");
  EXPECT_EQ(error_of({"--checkpoint", path("missing.pt"), "--out", path("m.safetensors")}),
            path("missing.pt") + ": checkpoint not found");
  fs::create_directories(path("folder.safetensors"));
  EXPECT_EQ(error_of({"--checkpoint", pt, "--out", path("folder.safetensors")}),
            path("folder.safetensors") + ": --out is a folder, expected a file name");
  const std::string unwritable = pt + "/m.safetensors";  // a file where a folder should be
  EXPECT_EQ(error_of({"--checkpoint", pt, "--out", unwritable}).rfind(unwritable + ": ", 0), 0u);
  EXPECT_FALSE(fs::exists(path("model.bin")));
  EXPECT_FALSE(fs::exists(path("m.safetensors")));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}),
            2);  // pt + folder
}

TEST(ExportFlags, CheckpointAndOutAreRequired) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"export", "--out", "x.safetensors"},
        std::vector<std::string>{"export", "--checkpoint", "x.pt"}}) {
    Cli cli;
    register_export(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

}  // namespace
}  // namespace vit::cli
