// Runs the cross-checks in tests/pycheck/ against the built vit binary. Each
// script compares vit's output with an independent Python/PyTorch reference
// and exits non-zero on a mismatch; they need Debian's python3-torch and skip
// without it (scripts/setup.sh --python-check installs it).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "vit_test_paths.hpp"

namespace {

namespace fs = std::filesystem;

// Debian's interpreter, which has python3-torch; the first python3 on PATH may not.
const std::string kPython = "/usr/bin/python3";

std::string quoted(const fs::path& path) {
  std::string out = "'";
  for (char c : path.string())
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Empty when the checks can run, otherwise why they cannot.
std::string python_torch_missing() {
  static const std::string reason = [] {
    if (!fs::exists(kPython)) return kPython + " not found";
    const std::string probe = kPython + " -c 'import torch, numpy' >/dev/null 2>&1";
    if (std::system(probe.c_str()) != 0)
      return kPython +
             " cannot import torch and numpy (install them: scripts/setup.sh --python-check)";
    return std::string();
  }();
  return reason;
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
    const std::string reason = python_torch_missing();
    if (!reason.empty()) GTEST_SKIP() << "Python cross-check skipped: " << reason;
  }

  // Runs tests/pycheck/<script>.py; its output names every comparison and its
  // largest difference, and is shown in the test log.
  void run_script(const std::string& script) {
    ASSERT_TRUE(fs::exists(VIT_BINARY)) << VIT_BINARY << " is not built (cmake --build build)";
    const fs::path work =
        fs::temp_directory_path() / ("vit_pycheck_" + script + "_" + std::to_string(::getpid()));
    fs::remove_all(work);
    fs::create_directories(work);
    const fs::path log = work / "output.txt";
    const fs::path path = fs::path(VIT_SOURCE_DIR) / "tests" / "pycheck" / (script + ".py");
    const std::string command = kPython + " " + quoted(path) + " --vit " + quoted(VIT_BINARY) +
                                " --workdir " + quoted(work) + " > " + quoted(log) + " 2>&1";
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

}  // namespace
