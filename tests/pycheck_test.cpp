// Runs the cross-checks in tests/pycheck/ against the built vit binary. Each
// script compares vit's output with an independent Python/PyTorch reference
// and exits non-zero on a mismatch. They need Debian's python3-torch and
// python3-numpy (the crops' check python3-torchvision and python3-pil too),
// which scripts/setup.sh --python-check installs: on CI (CI=true) a missing
// one fails the check, naming the package; elsewhere the check skips.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "vit/data/image_transform.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/planned_decode.hpp"

#include "vit_test_paths.hpp"

namespace {

namespace fs = std::filesystem;

// Debian's interpreter, which has python3-torch; the first python3 on PATH may
// not. $VIT_PYCHECK_PYTHON stands in for it (a python without torch, say).
std::string debian_python() {
  const char* python = std::getenv("VIT_PYCHECK_PYTHON");
  return python && *python ? python : "/usr/bin/python3";
}

bool on_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

std::string quoted(const fs::path& path) {
  std::string out = "'";
  for (char c : path.string())
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Empty when Debian's python imports every module of `packages` (module,
// Debian package), otherwise what is missing, naming the packages.
std::string missing_debian_packages(
    std::initializer_list<std::pair<const char*, const char*>> packages) {
  const std::string python = debian_python();
  if (!fs::exists(python)) return python + " not found (Debian's python3)";
  std::string missing;
  for (const auto& [module, package] : packages)
    if (std::system(
            (quoted(fs::path(python)) + " -c 'import " + module + "' >/dev/null 2>&1").c_str()) !=
        0)
      missing += std::string(missing.empty() ? "" : ", ") + package + " (" + python +
                 " cannot import " + module + ")";
  if (missing.empty()) return missing;
  return "missing Debian's " + missing +
         " (scripts/setup.sh --python-check installs the cross-checks' packages)";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class PyCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    static const std::string missing =
        missing_debian_packages({{"torch", "python3-torch"}, {"numpy", "python3-numpy"}});
    if (missing.empty()) return;
    if (on_ci()) FAIL() << "CI runs every Python cross-check: " << missing;
    GTEST_SKIP() << "Python cross-check skipped: " << missing;
  }

  // Runs tests/pycheck/<script>.py; its output names every comparison and its
  // largest difference, and is shown in the test log.
  // The script's --workdir; `prepare` writes its inputs there first.
  static fs::path workdir_of(const std::string& script) {
    return fs::temp_directory_path() / ("vit_pycheck_" + script + "_" + std::to_string(::getpid()));
  }

  // Runs a check that needs timm (pip's torch line's python); defined below.
  void run_timm_check(const std::string& script);

  void run_script(const std::string& script, bool keep_workdir = false,
                  const std::string& python = debian_python()) {
    ASSERT_TRUE(fs::exists(VIT_BINARY)) << VIT_BINARY << " is not built (cmake --build build)";
    const fs::path work = workdir_of(script);
    if (!keep_workdir) fs::remove_all(work);
    fs::create_directories(work);
    const fs::path log = work / "output.txt";
    const fs::path path = fs::path(VIT_SOURCE_DIR) / "tests" / "pycheck" / (script + ".py");
    const std::string command = quoted(fs::path(python)) + " " + quoted(path) + " --vit " +
                                quoted(VIT_BINARY) + " --workdir " + quoted(work) + " > " +
                                quoted(log) + " 2>&1";
    const int status = std::system(command.c_str());
    const std::string output = read_text(log);
    std::cout << output;
    EXPECT_EQ(status, 0) << script << " failed; its files are in " << work << "\n" << output;
    if (status == 0) fs::remove_all(work);
  }
};

TEST_F(PyCheck, WeightsFromPythonGiveTheSameLogits) {
  run_script("check_weights_from_python");
}

TEST_F(PyCheck, RolloutGivesTheSameMasksAsPython) {
  run_script("check_rollout");
}

TEST_F(PyCheck, AttentionDistanceGivesTheSameDistancesAsPython) {
  run_script("check_attn_distance");
}

TEST_F(PyCheck, TrainedAndExportedWeightsPredictTheSameInPython) {
  run_script("check_weights_into_python");
}

TEST_F(PyCheck, PosEmbedSimilarityAndResizeMatchPython) {
  run_script("check_pos_embed");
}

TEST_F(PyCheck, FilterPcaMatchesPython) {
  run_script("check_filters");
}

TEST_F(PyCheck, SaliencyAndGradientRolloutMatchPython) {
  run_script("check_saliency");
}

TEST_F(PyCheck, LogitLensAndTokenNormsMatchPython) {
  run_script("check_lens");
}

TEST_F(PyCheck, HeadAndBranchAblationMatchPython) {
  run_script("check_ablate");
}

TEST_F(PyCheck, CkaMatchesPython) {
  run_script("check_cka");
}

TEST_F(PyCheck, FaithfulnessCurvesMatchPython) {
  run_script("check_faithfulness");
}

TEST_F(PyCheck, ActivationAndAttributionPatchingMatchPython) {
  run_script("check_patch");
}

TEST_F(PyCheck, SparseAutoencoderStepAndScoresMatchPython) {
  run_script("check_sae");
}

// The python of the environment with Captum that scripts/setup.sh
// --python-check makes: $VIT_CAPTUM_VENV, or ~/.cache/vit/captum.
std::string captum_python() {
  if (const char* venv = std::getenv("VIT_CAPTUM_VENV")) return std::string(venv) + "/bin/python";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/vit/captum/bin/python";
}

TEST_F(PyCheck, IntegratedGradientsMatchCaptum) {
  const std::string python = captum_python();
  if (std::system(
          (quoted(fs::path(python)) + " -c 'import captum.attr' >/dev/null 2>&1").c_str()) != 0) {
    if (on_ci())
      FAIL() << python << " cannot import captum.attr, and CI must cross-check with Captum "
             << "(scripts/setup.sh --python-check installs it)";
    GTEST_SKIP() << python << " cannot import captum.attr (scripts/setup.sh --python-check)";
  }
  run_script("check_captum", /*keep_workdir=*/false, python);
}

// A python that imports timm: $VIT_TIMM_PYTHON, or that of an environment
// of pip's torch line (~/.cache/vit/torch-VERSION, where scripts/setup.sh
// --torch pip installs timm); empty where there is none.
std::string timm_python() {
  if (const char* python = std::getenv("VIT_TIMM_PYTHON")) return python;
  const char* home = std::getenv("HOME");
  const fs::path cache = fs::path(home ? home : "") / ".cache" / "vit";
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(cache, error)) {
    const fs::path python = entry.path() / "bin" / "python";
    if (entry.path().filename().string().rfind("torch-", 0) == 0 && fs::exists(python) &&
        std::system((quoted(python) + " -c 'import timm' >/dev/null 2>&1").c_str()) == 0)
      return python.string();
  }
  return "";
}

// Runs a check that needs timm in the python of pip's torch line. The
// LibTorch 2 line's run has timm on CI (setup.sh --torch pip installs it), so
// it must not skip there.
void PyCheck::run_timm_check(const std::string& script) {
  const std::string python = timm_python();
  if (python.empty()) {
    if (on_ci() && TORCH_VERSION_MAJOR >= 2)
      FAIL() << "no environment of pip's torch line imports timm, and CI must cross-check with "
                "it (scripts/setup.sh --torch pip installs it)";
    GTEST_SKIP() << "no python with timm (scripts/setup.sh --torch pip installs it)";
  }
  run_script(script, /*keep_workdir=*/false, python);
}

// timm's register models (reg_tokens, no_embed_class): vit predict gives
// timm's logits, and vit export gives timm's tensors back.
TEST_F(PyCheck, TimmRegisterModelsGiveTimmsLogits) {
  run_timm_check("check_timm_registers");
}

// timm's ViT families (DINOv2 with and without registers, DeiT III, CLIP,
// SigLIP, the *_reg*_gap_* models, DeiT distilled) open from the hub folders
// timm writes, with timm's logits and parameter counts.
TEST_F(PyCheck, TimmFamiliesOpenFromTheirHubFoldersWithTimmsLogits) {
  run_timm_check("check_timm_families");
}

// A photograph-like RGB image, (3, h, w): gradients, discs and noise.
at::Tensor photograph_rgb(int64_t h, int64_t w, int64_t seed) {
  torch::manual_seed(seed);
  auto y = torch::linspace(0, 1, h).view({1, h, 1}), x = torch::linspace(0, 1, w).view({1, 1, w});
  auto image =
      torch::cat({x.expand({1, h, w}), y.expand({1, h, w}), (x * y).expand({1, h, w})}) * 200;
  for (int k = 0; k < 5; ++k) {
    const auto cy = torch::rand({1}).item<double>(), cx = torch::rand({1}).item<double>();
    const auto disc = ((y - cy).pow(2) + (x - cx).pow(2)).lt(0.02 + 0.02 * k);
    image = torch::where(disc, torch::rand({3, 1, 1}) * 255, image);
  }
  return (image + torch::rand({3, h, w}) * 25).clamp(0, 255).to(torch::kUInt8);
}

// vit's random resized crop boxes and evaluation transform, for
// check_crops.py to hold against torchvision's.
TEST_F(PyCheck, CropsAndTheEvaluationTransformMatchTorchvision) {
  const std::string missing =
      missing_debian_packages({{"torchvision", "python3-torchvision"}, {"PIL", "python3-pil"}});
  if (!missing.empty()) {
    if (on_ci()) FAIL() << "CI runs every Python cross-check: " << missing;
    GTEST_SKIP() << missing;
  }
  const fs::path work = workdir_of("check_crops");
  fs::remove_all(work);
  fs::create_directories(work);
  struct Case {
    int64_t height, width;
    vit::RandomResizedCrop crop;
    const char* name;
  };
  vit::RandomResizedCrop narrow;  // a strip where most tries miss: the fallback matters
  narrow.scale = {0.5, 1.0};
  for (const Case& c : {Case{375, 500, {}, "default"}, Case{100, 600, narrow, "fallback"},
                        Case{640, 427, narrow, "tall"}}) {
    std::ofstream csv(work / ("boxes_" + std::to_string(c.height) + "x" + std::to_string(c.width) +
                              "_" + c.name + ".csv"));
    csv << c.crop.scale[0] << "," << c.crop.scale[1] << "," << c.crop.ratio[0] << ","
        << c.crop.ratio[1] << "\n";
    vit::data::Rng rng(11);
    for (int i = 0; i < 10000; ++i) {
      const auto b = vit::data::random_resized_crop_box(c.height, c.width, c.crop, rng);
      csv << b.top << "," << b.left << "," << b.height << "," << b.width << "\n";
    }
  }
  // 700 x 300: over twice as tall as wide, so Pillow 13 runs its vertical pass first.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{375, 500}, {480, 360}, {1200, 900},
                                                          {300, 300}, {333, 517}, {700, 300}};
  for (size_t k = 0; k < sizes.size(); ++k) {
    const auto [h, w] = sizes[k];
    const auto source = work / ("eval_" + std::to_string(k) + ".jpg");
    const auto pixels = photograph_rgb(h, w, int64_t(k));
    const auto hwc = pixels.permute({1, 2, 0}).contiguous();
    cv::Mat rgb(int(h), int(w), CV_8UC3, hwc.data_ptr<uint8_t>()), bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    std::vector<uint8_t> bytes;
    cv::imencode(".jpg", bgr, bytes, {cv::IMWRITE_JPEG_QUALITY, 92});
    std::ofstream(source, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    // Each of data.interpolation's three: eval_K.png (area), eval_K_bilinear.png, ...
    for (const auto interpolation :
         {vit::Interpolation::kArea, vit::Interpolation::kBilinear, vit::Interpolation::kBicubic}) {
      const auto ours = vit::io::decode_planned(
          bytes.data(), bytes.size(), 3,
          [&](int64_t ih, int64_t iw) {
            auto plan = vit::data::center_crop_plan(ih, iw, 224, 0.875);
            plan.interpolation = interpolation;
            return plan;
          },
          source.string());
      const std::string suffix = interpolation == vit::Interpolation::kArea
                                     ? ""
                                     : std::string("_") + vit::enum_name(interpolation);
      vit::io::write_png(work / ("eval_" + std::to_string(k) + suffix + ".png"), ours);
    }
  }
  run_script("check_crops", /*keep_workdir=*/true);
}

}  // namespace
