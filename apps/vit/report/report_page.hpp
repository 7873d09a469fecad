#pragma once
// The page of `vit report`: the run's own files, the analyses' pictures and numbers,
// each picture with a short explanation.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "vit/analysis/saliency.hpp"
#include "vit/io/html_page.hpp"

namespace vit::cli {

// Where `vit report` asked each analysis to write.
struct ReportAssets {
  std::filesystem::path root;  // RUN/report
  std::filesystem::path eval() const { return root / "eval-test"; }
  std::filesystem::path rollout() const { return root / "rollout"; }
  std::filesystem::path distance() const { return root / "attn-distance"; }
  std::filesystem::path attention() const { return root / "attention"; }
  std::filesystem::path pos_embed() const { return root / "pos-embed"; }
  std::filesystem::path filters() const { return root / "filters"; }
  std::filesystem::path saliency(SaliencyMethod method) const {
    return root / (std::string("saliency-") + enum_name(method));
  }
  std::filesystem::path lens() const { return root / "lens"; }
  std::filesystem::path probe() const { return root / "probe"; }
  std::filesystem::path ablate() const { return root / "ablate"; }
  std::filesystem::path cka() const { return root / "cka"; }
  std::filesystem::path faithfulness() const { return root / "faithfulness"; }
  std::filesystem::path snapshots() const { return root / "snapshots"; }
  std::filesystem::path sae_features() const { return root / "sae-features"; }
};

// The JSON documents of the analyses whose numbers the page quotes, as the commands
// wrote them; snapshots and the SAE's only where the run folder has them.
struct ReportNumbers {
  nlohmann::json eval, rollout, distance, filters;
  nlohmann::json lens, probe, ablate, cka, faithfulness, snapshots;
  nlohmann::json sae, sae_features;
};

void add_image(io::HtmlPage& page, const std::filesystem::path& png, const std::string& alt,
               const std::string& caption = "");
std::string percent(double fraction);  // "12.3%" for 0.123

// The sections that look inside the model, layer by layer (report_inside.cpp).
void inside_sections(io::HtmlPage& page, const ReportAssets& assets, const ReportNumbers& numbers);

// The self-contained HTML document. Throws vit::Error naming a file the analyses
// should have written and did not.
std::string report_page(const std::filesystem::path& run, const ReportAssets& assets,
                        const ReportNumbers& numbers);

}  // namespace vit::cli
