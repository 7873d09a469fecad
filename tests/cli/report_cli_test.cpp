#include "report/cmd_report.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/config.hpp"
#include "vit/io/image_io.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::run_vit;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ReportEndToEnd : public ::testing::Test {
 protected:
  // A finished tiny run: config.json, metrics.jsonl and best.pt, as vit train leaves them.
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_report_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    const Config config = testing::block_config(dir_ / "cifar");
    testing::train_tiny_checkpoint(config, dir_ / "run");
    std::ofstream(dir_ / "run" / "config.json") << config_to_json_string(config);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static int report(const fs::path& run) {
    return run_vit({"report", "--run", run.string(), "--samples", "2", "--threads", "1", "--device",
                    "cpu", "--quiet"});
  }

  static inline fs::path dir_;
};

TEST_F(ReportEndToEnd, OnePageWithEveryPictureEmbedded) {
  ASSERT_EQ(report(dir_ / "run"), 0);
  const std::string html = read_text(dir_ / "run" / "report.html");
  // eval (confusion, worst), rollout, distance, attention, pos-embed, filters,
  // two saliency grids, lens, probe, ablate, cka, faithfulness; this run has no
  // curves.png (vit train draws it, not the Trainer) and no snapshots.
  // (std::regex recurses per character and overflows the stack on long base64.)
  const std::string image = "\" src=\"data:image/png;base64,iVBORw0KGgo";
  int count = 0;
  for (auto at = html.find(image); at != std::string::npos; at = html.find(image, at + 1))
    ++count;
  EXPECT_EQ(count, 14);
  EXPECT_EQ(std::count(html.begin(), html.end(), '<') - std::count(html.begin(), html.end(), '>'),
            0);
  for (const char* section :
       {"id=\"overview\"", "id=\"curves\"", "id=\"metrics\"", "id=\"worst\"", "id=\"rollout\"",
        "id=\"distance\"", "id=\"attention\"", "id=\"pos-embed\"", "id=\"filters\"",
        "id=\"saliency\"", "id=\"lens\"", "id=\"probe\"", "id=\"ablate\"", "id=\"cka\"",
        "id=\"faithfulness\"", "id=\"config\"", "(This run has no curves.png.)"})
    EXPECT_NE(html.find(section), std::string::npos) << section;
  // Nothing to fetch: no links or sources outside the page.
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("src=\"file"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "report" / "filters" / "filters.json"));
  EXPECT_EQ(html.find("id=\"snapshots\""), std::string::npos);
}

TEST_F(ReportEndToEnd, MissingRunOrFilesAreOneLineErrors) {
  EXPECT_EQ(error_of([] { report(dir_ / "nowhere"); }),
            (dir_ / "nowhere").string() +
                ": no such run folder; pass --run DIR, a folder vit train wrote");
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(error_of([] { report(dir_ / "empty"); }),
            (dir_ / "empty" / "config.json").string() +
                ": missing; vit report needs a training run's folder (config.json, "
                "metrics.jsonl, best.pt)");
}

// Runs scripts/report_screenshot.sh on `page`; returns its exit status and
// output. Skips when chromium is missing, except on CI, where that fails.
int screenshot(const fs::path& page, const fs::path& png, std::string& output) {
  const std::string script = std::string(VIT_SOURCE_DIR) + "/scripts/report_screenshot.sh";
  const fs::path log = png.string() + ".log";
  const std::string command = "'" + script + "' '" + page.string() + "' '" + png.string() +
                              "' > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  output = read_text(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool chromium_missing() {
  return std::system("command -v chromium >/dev/null 2>&1") != 0;
}

class ReportInABrowser : public ReportEndToEnd {
 protected:
  void SetUp() override {
    if (!chromium_missing()) return;
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true")
      FAIL() << "chromium is not installed, and CI must run the browser check "
                "(scripts/setup.sh --browser-check installs it)";
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh --browser-check)";
  }
};

TEST_F(ReportInABrowser, EveryImageDecodesWithoutErrors) {
  ASSERT_EQ(report(dir_ / "run"), 0);
  std::string output;
  const fs::path png = dir_ / "report.png";
  EXPECT_EQ(screenshot(dir_ / "run" / "report.html", png, output), 0) << output;
  EXPECT_NE(output.find(": 14 images, 0 not decoded, 0 errors"), std::string::npos) << output;
  const auto shot = io::read_image(png, 3, 0);
  EXPECT_EQ(shot.size(2), 1200);
  EXPECT_GT(shot.size(1), 3000);  // the whole page, not one screen
}

TEST_F(ReportInABrowser, ABrokenImageOrAScriptErrorFails) {
  const fs::path page = dir_ / "broken.html";
  std::ofstream(page) << "<!DOCTYPE html><html><head><title>t</title></head><body>"
                         "<img alt=\"bad\" src=\"data:image/png;base64,AAAA\">"
                         "<script>undefined_function();</script></body></html>";
  std::string output;
  EXPECT_EQ(screenshot(page, dir_ / "broken.png", output), 1) << output;
  EXPECT_NE(output.find("1 images, 1 not decoded"), std::string::npos) << output;
  EXPECT_NE(output.find("broken image: bad"), std::string::npos) << output;
  EXPECT_NE(output.find("script error"), std::string::npos) << output;
}

}  // namespace
}  // namespace vit::cli
