#pragma once
// The page of `vit report`: the run's own files (config.json, metrics.jsonl,
// curves.png), the pictures the analyses wrote under the assets folder and
// the numbers they returned, laid out with a short explanation of each picture.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

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

// The JSON documents of the analyses whose numbers the page quotes, as the
// commands wrote them (metrics.json, rollout.json, attn_distance.json, filters.json).
struct ReportNumbers {
  nlohmann::json eval, rollout, distance, filters;
};

// The whole self-contained HTML document. Throws vit::Error naming a file
// that the analyses should have written and did not.
std::string report_page(const std::filesystem::path& run, const ReportAssets& assets,
                        const ReportNumbers& numbers);

}  // namespace vit::cli
