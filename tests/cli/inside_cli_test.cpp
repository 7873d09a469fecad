// The layer-by-layer analyses end to end on a tiny trained checkpoint: vit
// lens, probe, ablate, patch, cka, faithfulness and sae write exactly their
// documented JSON keys, a CSV and a PNG, agree with the in-process analyses, and refuse
// bad input with a one-line error.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/analysis/sae_file.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::read_json;
using testing::run_vit;

std::set<std::string> keys_of(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items())
    keys.insert(key);
  return keys;
}

class InsideEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_inside_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    Config config = testing::block_config(dir_ / "cifar", Pool::kMean);
    config.train.snapshot_every = 1;
    checkpoint_ = testing::train_tiny_checkpoint(config, dir_ / "run");
    std::ofstream(dir_ / "run" / "config.json") << config_to_json_string(config);
    config.seed = 1;
    other_ = testing::train_tiny_checkpoint(config, dir_ / "run-seed1");
    Config wider = testing::block_config(dir_ / "cifar", Pool::kMean);
    wider.model.dim = 24;
    wider_ = testing::train_tiny_checkpoint(wider, dir_ / "run-wider");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Runs `command` on the checkpoint into dir_/out and returns its JSON file.
  static nlohmann::json analyse(const std::string& command, const std::string& out,
                                std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        command, "--checkpoint", checkpoint_, "--out",  (dir_ / out).string(), "--threads",
        "1",     "--device",     "cpu",       "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(run_vit(args), 0);
    EXPECT_TRUE(fs::exists(dir_ / out / (command + ".csv")));
    EXPECT_TRUE(fs::exists(dir_ / out / (command + ".png")));
    return read_json(dir_ / out / (command + ".json"));
  }

  static std::string failure(std::vector<std::string> args) {
    args.insert(args.end(), {"--checkpoint", checkpoint_, "--out", (dir_ / "bad").string(),
                             "--device", "cpu", "--quiet"});
    return error_of([&] { run_vit(args); });
  }

  static inline fs::path dir_;
  static inline std::string checkpoint_, other_, wider_;
};

TEST_F(InsideEndToEnd, LensReadsEveryLayerOfTheSamples) {
  const auto j = analyse("lens", "lens", {"--samples", "8"});
  EXPECT_EQ(keys_of(j),
            (std::set<std::string>{"pool", "layers", "samples", "logits", "accuracy", "agreement",
                                   "token_norms", "registers", "register_norms"}));
  EXPECT_EQ(j["registers"], 0);
  EXPECT_TRUE(j["register_norms"].is_null());
  EXPECT_EQ(j["pool"], "mean");
  EXPECT_EQ(j["layers"], 3);  // depth 2: layers 0, 1, 2
  EXPECT_EQ(j["samples"], 8);
  ASSERT_EQ(j["logits"].size(), 3u);
  ASSERT_EQ(j["logits"][2].size(), 8u);
  EXPECT_EQ(j["logits"][2][0].size(), 10u);
  EXPECT_EQ(j["accuracy"].size(), 3u);
  EXPECT_EQ(j["agreement"][2], 1.0);
  EXPECT_EQ(keys_of(j["token_norms"]), (std::set<std::string>{"median", "p99", "max", "high"}));
}

TEST_F(InsideEndToEnd, LensOfImagesHasNoAccuracy) {
  const fs::path image = dir_ / "one.png";
  io::write_png(image, torch::randint(0, 256, {3, 16, 16}, torch::kLong).to(torch::kUInt8));
  const auto j = analyse("lens", "lens-images", {"--images", image.string()});
  EXPECT_TRUE(j["accuracy"].is_null());
  EXPECT_EQ(j["samples"], 1);
}

TEST_F(InsideEndToEnd, ProbeScoresEveryLayer) {
  const auto j = analyse("probe", "probe", {"--samples", "20", "--train-samples", "60"});
  EXPECT_EQ(keys_of(j),
            (std::set<std::string>{"layers", "train_samples", "samples", "train_accuracy",
                                   "val_accuracy", "model_val_accuracy"}));
  EXPECT_EQ(j["layers"], 3);
  EXPECT_EQ(j["train_samples"], 60);
  EXPECT_EQ(j["samples"], 20);
  EXPECT_EQ(j["val_accuracy"].size(), 3u);
  // Deterministic for a seed: the same numbers again.
  EXPECT_EQ(analyse("probe", "probe-again", {"--samples", "20", "--train-samples", "60"}), j);
}

TEST_F(InsideEndToEnd, AblateListsEveryHeadAndBranch) {
  for (const std::string mode : {"zero", "mean"}) {
    const auto j = analyse("ablate", "ablate-" + mode, {"--samples", "10", "--mode", mode});
    EXPECT_EQ(keys_of(j),
              (std::set<std::string>{"samples", "mode", "baseline", "heads", "attention", "mlp"}));
    EXPECT_EQ(j["mode"], mode);
    ASSERT_EQ(j["heads"].size(), 2u);
    EXPECT_EQ(j["heads"][0].size(), 2u);
    EXPECT_EQ(keys_of(j["heads"][1][1]), (std::set<std::string>{"loss", "accuracy"}));
    EXPECT_EQ(j["attention"].size(), 2u);
    EXPECT_EQ(j["mlp"].size(), 2u);
  }
}

TEST_F(InsideEndToEnd, PatchMeasuresEveryPositionAndHeadOnValidationPairs) {
  const auto both = analyse("patch", "patch", {"--pairs", "3", "--method", "both"});
  EXPECT_EQ(keys_of(both), (std::set<std::string>{"pairs", "mode", "residual", "heads",
                                                  "attribution", "correlation"}));
  EXPECT_EQ(both["pairs"], 3);
  EXPECT_EQ(both["mode"], "both");
  ASSERT_EQ(both["residual"].size(), 3u);  // depth 2: layers 0, 1, 2
  const auto& last = both["residual"][2];
  ASSERT_GT(last.size(), 1u);
  // The head reads the mean of the patches: after the last block their
  // effects add up to the whole difference, and the class token's is none.
  double patches = 0;
  for (size_t t = 1; t < last.size(); ++t)
    patches += last[t].get<double>();
  // To fp32 rounding, which the normalisation magnifies: on this barely
  // trained model a pair's clean and corrupt logit differences lie close, and
  // single effects reach about 30.
  EXPECT_NEAR(patches, 1.0, 2e-3);
  EXPECT_NEAR(last[0].get<double>(), 0.0, 2e-3);
  ASSERT_EQ(both["heads"].size(), 2u);
  EXPECT_EQ(both["heads"][0].size(), 2u);
  EXPECT_EQ(keys_of(both["attribution"]), (std::set<std::string>{"residual", "heads"}));
  EXPECT_EQ(both["attribution"]["residual"].size(), 3u);
  EXPECT_EQ(both["attribution"]["residual"][0].size(), last.size());
  EXPECT_EQ(both["attribution"]["heads"].size(), 2u);
  EXPECT_TRUE(both["correlation"].is_number());
  // One method alone: the other's keys are null, and the pairs are the same.
  const auto real = analyse("patch", "patch-activation", {"--pairs", "3"});
  EXPECT_EQ(real["mode"], "activation");
  EXPECT_EQ(real["residual"], both["residual"]);
  EXPECT_TRUE(real["attribution"]["residual"].is_null());
  EXPECT_TRUE(real["attribution"]["heads"].is_null());
  EXPECT_TRUE(real["correlation"].is_null());
  const auto estimate =
      analyse("patch", "patch-attribution", {"--pairs", "3", "--method", "attribution"});
  EXPECT_TRUE(estimate["residual"].is_null());
  EXPECT_EQ(estimate["attribution"], both["attribution"]);
}

TEST_F(InsideEndToEnd, PatchOfTwoImagesNeedsTwoPredictions) {
  const auto image = dir_ / "one.png";
  io::write_png(image, torch::full({3, 16, 16}, 128, torch::kUInt8));
  const std::string error =
      failure({"patch", "--clean", image.string(), "--corrupt", image.string()});
  EXPECT_NE(error.find("for both --clean and --corrupt; patching needs two different "
                       "predictions"),
            std::string::npos)
      << error;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"patch", "--clean", image.string()},
        {"patch", "--clean", image.string(), "--corrupt", (dir_ / "missing.png").string()},
        {"patch", "--pairs", "0"},
        {"patch", "--pairs", "2", "--clean", image.string(), "--corrupt", image.string()},
        {"patch", "--method", "gradient"}}) {
    Cli cli;
    register_all_commands(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError) << args.back();
  }
}

TEST_F(InsideEndToEnd, SaeTrainsScoresAndShowsItsFeaturesAndTheReportBrowsesThem) {
  const std::vector<std::string> common = {"--checkpoint", checkpoint_, "--threads", "1",
                                           "--device",     "cpu",       "--quiet"};
  const auto with_common = [&](std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    return args;
  };
  ASSERT_EQ(run_vit(with_common({"sae", "train", "--layer", "1", "--features", "64", "--k", "4",
                                 "--tokens", "512", "--epochs", "2", "--samples", "12"})),
            0);
  const fs::path sae = dir_ / "run" / "sae";  // the default: sae/ beside the checkpoint
  const auto scores = read_json(sae / "sae.json");
  EXPECT_EQ(keys_of(scores),
            (std::set<std::string>{"layer", "features", "tokens", "explained_variance", "l0",
                                   "dead_fraction", "ce_loss_clean", "ce_loss_spliced",
                                   "ce_loss_zero_ablated", "ce_recovered"}));
  EXPECT_EQ(scores["layer"], 1);
  EXPECT_EQ(scores["features"], 64);
  EXPECT_EQ(scores["tokens"], 512);  // 32 of the 80 training images, 16 patches each
  EXPECT_LE(scores["explained_variance"].get<double>(), 1.0);
  EXPECT_GT(scores["l0"].get<double>(), 0.0);
  EXPECT_LE(scores["l0"].get<double>(), 4.0);
  EXPECT_GE(scores["dead_fraction"].get<double>(), 0.0);
  EXPECT_LE(scores["dead_fraction"].get<double>(), 1.0);
  // The recovered share is what the three cross-entropies say.
  const double clean = scores["ce_loss_clean"], spliced = scores["ce_loss_spliced"],
               zeroed = scores["ce_loss_zero_ablated"];
  EXPECT_NEAR(scores["ce_recovered"].get<double>(), (zeroed - spliced) / (zeroed - clean), 1e-9);
  const SaeFile file = load_sae((sae / "sae.safetensors").string());
  EXPECT_EQ(file.layer, 1);
  EXPECT_EQ(file.sae.k, 4);
  EXPECT_EQ(file.sae.W_dec.sizes(), (c10::IntArrayRef{64, 16}));
  std::ifstream csv(sae / "sae.csv");
  std::string line;
  int lines = 0;
  while (std::getline(csv, line))
    ++lines;
  EXPECT_EQ(lines, 3);  // the header and two epochs
  EXPECT_TRUE(fs::exists(sae / "sae.png"));

  ASSERT_EQ(
      run_vit(with_common({"sae", "features", "--top", "3", "--examples", "2", "--samples", "12"})),
      0);
  const auto features = read_json(sae / "features.json");
  EXPECT_EQ(keys_of(features),
            (std::set<std::string>{"sae", "layer", "samples", "tokens", "frequency", "features"}));
  EXPECT_EQ(features["samples"], 12);
  EXPECT_EQ(features["tokens"], 12 * 16);
  EXPECT_EQ(features["frequency"].size(), 64u);
  ASSERT_EQ(features["features"].size(), 3u);
  double previous = 1.0;
  for (const auto& f : features["features"]) {
    EXPECT_EQ(f["frequency"], features["frequency"][f["feature"].get<size_t>()]);
    EXPECT_LE(f["frequency"].get<double>(), previous);
    previous = f["frequency"];
    EXPECT_TRUE(fs::exists(sae / f["png"].get<std::string>())) << f["png"];
    ASSERT_GE(f["top"].size(), 1u);
    EXPECT_LE(f["top"].size(), 2u);
    EXPECT_EQ(keys_of(f["top"][0]),
              (std::set<std::string>{"image", "label", "patch", "row", "column", "activation"}));
    EXPECT_EQ(f["top"][0]["row"].get<int64_t>() * 4 + f["top"][0]["column"].get<int64_t>(),
              f["top"][0]["patch"].get<int64_t>());
  }
  EXPECT_TRUE(fs::exists(sae / "features.csv"));

  ASSERT_EQ(run_vit({"report", "--run", (dir_ / "run").string(), "--samples", "2", "--device",
                     "cpu", "--threads", "1", "--quiet"}),
            0);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "report" / "sae-features" / "features.json"));
  std::ifstream page(dir_ / "run" / "report.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("Sparse autoencoder features"), std::string::npos);
  EXPECT_NE(html.find("it recovers"), std::string::npos);  // sae.json's numbers
}

TEST_F(InsideEndToEnd, SaeRefusesBadInputWithOneLine) {
  EXPECT_EQ(failure({"sae", "train", "--layer", "3"}),
            "--layer 3: expected 0..2 (0 the embeddings, l the residual stream after block l)");
  EXPECT_EQ(failure({"sae", "train", "--layer", "1", "--features", "8", "--k", "9"}),
            "--k 9 is above the 8 features; expected 1..8");
  EXPECT_EQ(failure({"sae", "train", "--layer", "1", "--l1", "-1"}),
            "--l1 -1: expected a penalty > 0");
  const fs::path narrow = dir_ / "narrow.safetensors";
  save_sae(narrow.string(), {SparseAutoencoder::random(7, 14, 2, 0), 1, 0.0});
  EXPECT_EQ(failure({"sae", "features", "--sae", narrow.string()}),
            narrow.string() + ": a sparse autoencoder of width 7, but the model's width is 16");
  EXPECT_EQ(failure({"sae", "train", "--layer", "1", "--init", narrow.string()}),
            narrow.string() + ": a sparse autoencoder of width 7, but the model's width is 16");
  const std::string missing = (dir_ / "none.safetensors").string();
  EXPECT_EQ(failure({"sae", "features", "--sae", missing}),
            missing + ": no such file; train one with vit sae train --layer L, or pass --sae FILE");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sae"},
        {"sae", "train"},
        {"sae", "train", "--layer", "1", "--k", "0"},
        {"sae", "train", "--layer", "1", "--k", "4", "--l1", "0.1"},
        {"sae", "train", "--layer", "1", "--tokens", "0"},
        {"sae", "train", "--layer", "1", "--epochs", "0"},
        {"sae", "features", "--top", "0"}}) {
    Cli cli;
    register_all_commands(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError) << args.size();
  }
}

TEST_F(InsideEndToEnd, SaeTrainGoesOnFromAnSaeOfTheSameShape) {
  const fs::path first = dir_ / "sae-first", second = dir_ / "sae-second";
  const std::vector<std::string> base = {"sae",      "train", "--layer",   "2",        "--features",
                                         "32",       "--k",   "2",         "--tokens", "256",
                                         "--epochs", "1",     "--samples", "8"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--checkpoint", checkpoint_, "--out", first.string(), "--threads", "1",
                           "--device", "cpu", "--quiet"});
  ASSERT_EQ(run_vit(args), 0);
  const std::string init = (first / "sae.safetensors").string();
  EXPECT_EQ(failure({"sae", "train", "--layer", "1", "--init", init}),
            "--init " + init + ": trained on layer 2, not --layer 1");
  EXPECT_EQ(failure({"sae", "train", "--layer", "2", "--init", init, "--features", "64"}),
            "--init " + init + " has 32 features, not --features 64");
  EXPECT_EQ(failure({"sae", "train", "--layer", "2", "--init", init, "--l1", "0.5"}),
            "--init " + init + " is a TopK SAE with k 2, not --l1's ReLU SAE");
  args = {
      "sae",   "train",         "--layer",   "2",         "--init",   init,           "--tokens",
      "256",   "--epochs",      "1",         "--samples", "8",        "--checkpoint", checkpoint_,
      "--out", second.string(), "--threads", "1",         "--device", "cpu",          "--quiet"};
  ASSERT_EQ(run_vit(args), 0);
  const SaeFile before = load_sae(init), after = load_sae((second / "sae.safetensors").string());
  EXPECT_EQ(after.sae.k, 2);  // the file's, with no --k given
  EXPECT_EQ(after.sae.features(), 32);
  // Training went on from the first SAE's weights: one more epoch moved them a little.
  const double moved = (after.sae.W_dec - before.sae.W_dec).abs().max().item<double>();
  EXPECT_GT(moved, 0.0);
  EXPECT_LT(moved, 0.05);
}

TEST_F(InsideEndToEnd, CkaOfOneModelAndOfTwoSeeds) {
  const auto self = analyse("cka", "cka", {"--samples", "12"});
  EXPECT_EQ(keys_of(self), (std::set<std::string>{"samples", "a", "b", "matrix"}));
  EXPECT_EQ(self["a"], checkpoint_);
  EXPECT_EQ(self["b"], checkpoint_);
  ASSERT_EQ(self["matrix"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(self["matrix"][i][i].get<double>(), 1.0, 1e-9);
    for (size_t k = 0; k < 3; ++k)
      // Bit-identical by construction: linear_cka(x, y) and linear_cka(y, x)
      // multiply the same float64 Grams elementwise and sum them in the same order.
      EXPECT_EQ(self["matrix"][i][k].get<double>(), self["matrix"][k][i].get<double>());
  }
  const auto two = analyse("cka", "cka-seeds", {"--samples", "12", "--against", other_});
  EXPECT_EQ(two["b"], other_);
  EXPECT_LT(two["matrix"][2][2].get<double>(), 1.0 - 1e-6) << "two seeds differ";
}

TEST_F(InsideEndToEnd, FaithfulnessScoresEveryMethod) {
  const auto j = analyse("faithfulness", "faithfulness", {"--samples", "4", "--step", "5"});
  EXPECT_EQ(keys_of(j), (std::set<std::string>{"samples", "step", "methods"}));
  EXPECT_EQ(j["step"], 5);
  EXPECT_EQ(keys_of(j["methods"]),
            (std::set<std::string>{"rollout", "grad", "grad-x-input", "grad-rollout",
                                   "integrated-gradients", "smoothgrad", "random"}));
  for (const auto& [name, m] : j["methods"].items()) {
    EXPECT_EQ(m["deletion"].size(), 5u) << name;  // 0, 5, 10, 15, 16 of 16 patches removed
    EXPECT_GE(m["deletion_auc"].get<double>(), 0.0);
    EXPECT_LE(m["insertion_auc"].get<double>(), 1.0);
    // Every method starts from the same intact images and ends at the same
    // empty ones. The same images go through the model in other batches,
    // where a BLAS may pick other kernels (AVX2 and AVX-512 hosts differ in
    // the last bits), so the mean class probabilities, computed in fp32,
    // agree to fp32's precision: a few units of 2^-24 (6e-8) relative, with
    // room for the product's rounding.
    constexpr double kFp32Probability = 1e-6;
    EXPECT_NEAR(m["deletion"][0].get<double>(), j["methods"]["random"]["deletion"][0].get<double>(),
                kFp32Probability);
    EXPECT_NEAR(m["deletion"][4].get<double>(), m["insertion"][0].get<double>(), kFp32Probability);
  }
}

TEST_F(InsideEndToEnd, BadInputIsAOneLineError) {
  EXPECT_EQ(failure({"cka", "--against", wider_}).find('\n'), std::string::npos);
  EXPECT_NE(failure({"cka", "--against", wider_}).find("another architecture"), std::string::npos);
  EXPECT_EQ(failure({"probe", "--l2", "-1"}), "--l2 -1: expected a penalty >= 0");
  EXPECT_EQ(failure({"faithfulness", "--step", "17"}),
            "--step 17: expected 1..16, the number of patches");
  EXPECT_EQ(failure({"faithfulness", "--class", "10"}),
            "--class 10 is outside the model's classes 0..9");
  for (const char* command : {"lens", "probe", "ablate", "cka", "faithfulness"}) {
    Cli cli;
    register_all_commands(cli);
    EXPECT_THROW(cli.parse({command, "--samples", "0"}), CLI::ParseError) << command;
  }
  Cli cli;
  register_all_commands(cli);
  EXPECT_THROW(cli.parse({"ablate", "--mode", "noise"}), CLI::ParseError);
}

TEST_F(InsideEndToEnd, TrainingKeptASnapshotPerEpochAndTheReportUsesThem) {
  EXPECT_TRUE(fs::exists(dir_ / "run" / "snapshots" / "epoch-001.pt"));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "snapshots" / "epoch-002.pt"));
  EXPECT_EQ(run_vit({"report", "--run", (dir_ / "run").string(), "--samples", "2", "--device",
                     "cpu", "--threads", "1", "--quiet"}),
            0);
  const auto snapshots = read_json(dir_ / "run" / "report" / "snapshots" / "snapshots.json");
  EXPECT_EQ(snapshots["epochs"], nlohmann::json({1, 2}));
  ASSERT_EQ(snapshots["cka_with_best"].size(), 2u);
  EXPECT_EQ(snapshots["lens_accuracy"][0].size(), 3u);
  for (const char* part : {"lens/lens.json", "probe/probe.json", "ablate/ablate.json",
                           "cka/cka.json", "faithfulness/faithfulness.json"})
    EXPECT_TRUE(fs::exists(dir_ / "run" / "report" / part)) << part;
}

}  // namespace
}  // namespace vit::cli
