#pragma once
// The page of `vit report`: the run's own files (config.json, metrics.jsonl,
// curves.png) and what the analysis commands wrote under the assets folder,
// laid out with a short explanation of each picture.
#include <filesystem>
#include <string>

namespace vit::cli {

// Where `vit report` asked each analysis to write; fixed names so the page
// and the command agree.
struct ReportAssets {
  std::filesystem::path root;  // RUN/report
  std::filesystem::path eval() const { return root / "eval-test"; }
  std::filesystem::path rollout() const { return root / "rollout"; }
  std::filesystem::path distance() const { return root / "attn-distance"; }
  std::filesystem::path attention() const { return root / "attention"; }
  std::filesystem::path pos_embed() const { return root / "pos-embed"; }
  std::filesystem::path filters() const { return root / "filters"; }
  std::filesystem::path saliency(const std::string& method) const {
    return root / ("saliency-" + method);
  }
};

// The whole self-contained HTML document. Throws vit::Error naming a file
// that the analyses should have written and did not.
std::string report_page(const std::filesystem::path& run, const ReportAssets& assets);

}  // namespace vit::cli
