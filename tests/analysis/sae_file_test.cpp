// analysis/sae_file: an SAE written and read back bit for bit with its layer,
// k and penalty, and every kind of wrong file a one-line error.
#include "vit/analysis/sae_file.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

class SaeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_sae_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(SaeFileTest, RoundTripsTheWeightsLayerKAndPenalty) {
  SaeFile file{SparseAutoencoder::random(12, 40, 5, 3), 2, 0.0};
  file.sae.b_enc.uniform_(-1, 1);
  file.sae.b_dec.uniform_(-1, 1);
  save_sae(path("sae.safetensors"), file);
  const SaeFile back = load_sae(path("sae.safetensors"));
  EXPECT_EQ(back.layer, 2);
  EXPECT_EQ(back.sae.k, 5);
  EXPECT_TRUE(torch::equal(back.sae.W_enc, file.sae.W_enc));
  EXPECT_TRUE(torch::equal(back.sae.b_enc, file.sae.b_enc));
  EXPECT_TRUE(torch::equal(back.sae.W_dec, file.sae.W_dec));
  EXPECT_TRUE(torch::equal(back.sae.b_dec, file.sae.b_dec));

  SaeFile relu{SparseAutoencoder::random(12, 40, 0, 3), 0, 0.125};
  save_sae(path("relu.safetensors"), relu);
  EXPECT_EQ(load_sae(path("relu.safetensors")).sae.k, 0);
  EXPECT_EQ(load_sae(path("relu.safetensors")).l1, 0.125);
}

TEST_F(SaeFileTest, AFileForAnotherModelNamesWhatDiffers) {
  const SaeFile file{SparseAutoencoder::random(12, 40, 5, 3), 3, 0.0};
  ModelConfig m;
  m.dim = 16;
  m.depth = 4;
  EXPECT_EQ(error_of([&] { check_sae_fits(file, m, "f"); }),
            "f: a sparse autoencoder of width 12, but the model's width is 16");
  m.dim = 12;
  m.depth = 2;
  EXPECT_EQ(error_of([&] { check_sae_fits(file, m, "f"); }),
            "f: trained on layer 3, but the model has layers 0..2");
  m.depth = 3;
  EXPECT_NO_THROW(check_sae_fits(file, m, "f"));
}

TEST_F(SaeFileTest, WrongFilesAreOneLineErrors) {
  const auto sae = SparseAutoencoder::random(4, 8, 2, 0);
  const TensorMap tensors = {
      {"W_enc", sae.W_enc}, {"b_enc", sae.b_enc}, {"W_dec", sae.W_dec}, {"b_dec", sae.b_dec}};
  const StringMap metadata = {{"format", "vit-sae"}, {"layer", "1"}, {"k", "2"}};
  const auto error_with = [&](const TensorMap& t, const StringMap& m) {
    write_safetensors(path("bad.safetensors"), t, m);
    return error_of([&] { load_sae(path("bad.safetensors")); });
  };
  EXPECT_NE(error_with(tensors, {{"layer", "1"}, {"k", "2"}}).find("not a sparse autoencoder"),
            std::string::npos);
  TensorMap missing = tensors;
  missing.erase("b_dec");
  EXPECT_NE(error_with(missing, metadata).find("no tensor 'b_dec'"), std::string::npos);
  TensorMap narrow = tensors;
  narrow["b_dec"] = torch::zeros({3});
  EXPECT_NE(error_with(narrow, metadata).find("inconsistent shapes"), std::string::npos);
  StringMap big_k = metadata;
  big_k["k"] = "9";
  EXPECT_NE(error_with(tensors, big_k).find("k 9 for 8 features"), std::string::npos);
  StringMap word = metadata;
  word["layer"] = "two";
  EXPECT_NE(error_with(tensors, word).find("metadata 'layer' is 'two', expected a whole number"),
            std::string::npos);
  EXPECT_EQ(error_with(tensors, word).find('\n'), std::string::npos);
  StringMap penalty = metadata;
  penalty["l1"] = "-0.5";
  EXPECT_NE(error_with(tensors, penalty).find("metadata 'l1' is '-0.5', expected a penalty >= 0"),
            std::string::npos);
  penalty["l1"] = "0.5x";
  EXPECT_NE(error_with(tensors, penalty).find("metadata 'l1' is '0.5x'"), std::string::npos);
}

}  // namespace
}  // namespace vit
