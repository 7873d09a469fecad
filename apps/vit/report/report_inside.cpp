// The report's sections that look inside the model, layer by layer: the logit
// lens, linear probes, head ablation, CKA, faithfulness of the saliency maps
// and, when the run kept snapshots, how the layers converged over training.
// Each states what this run's numbers say, read from the commands' JSON.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/report_page.hpp"
#include "vit/analysis/ablation.hpp"

namespace vit::cli {
namespace {

using nlohmann::json;

// The first layer whose value reaches `fraction` of the last layer's.
size_t first_layer_reaching(const json& values, double fraction) {
  const double last = values.back().get<double>();
  for (size_t l = 0; l < values.size(); ++l)
    if (values[l].get<double>() >= fraction * last) return l;
  return values.size() - 1;
}

void lens_section(io::HtmlPage& page, const ReportAssets& assets, const json& lens) {
  page.section("Logit lens", "lens");
  const json& accuracy = lens["accuracy"];
  const json& readout = accuracy.is_null() ? lens["agreement"] : accuracy;
  const size_t layer = first_layer_reaching(readout, 0.9);
  const json& norms = lens["token_norms"];
  const double ratio =
      norms["max"].back().get<double>() / std::max(norms["median"].back().get<double>(), 1e-12);
  const std::string before = layer > 0 ? fmt::format(" (layer {} gives {})", layer - 1,
                                                     percent(readout[layer - 1].get<double>()))
                                       : std::string();
  page.paragraph(fmt::format(
      "Every layer's residual stream read out through the model's own final norm, pooling and "
      "head, as if the network ended there (the logit lens). It shows in which layer the class "
      "becomes readable. Here the readout first reaches 90% of the last layer's {} ({}) at layer "
      "{} of {}{}; the embeddings alone (layer 0) give {}. The right panel shows the patch "
      "tokens' norms: in the last layer the largest is {:.1f}x the median{}.",
      accuracy.is_null() ? "agreement" : "accuracy", percent(readout.back().get<double>()), layer,
      readout.size() - 1, before, percent(readout.front().get<double>()), ratio,
      ratio > 4 ? ", the kind of high-norm outlier token Darcet et al. (2024) found in large ViTs"
                : ", no high-norm outliers (Darcet et al., 2024, find them in large ViTs)"));
  add_image(page, assets.lens() / "lens.png", "logit lens accuracy and token norms");
}

void probe_section(io::HtmlPage& page, const ReportAssets& assets, const json& probe) {
  page.section("Linear probes", "probe");
  const json& val = probe["val_accuracy"];
  size_t best = 0;
  for (size_t l = 0; l < val.size(); ++l)
    if (val[l].get<double>() > val[best].get<double>()) best = l;
  page.paragraph(fmt::format(
      "A logistic regression trained on each layer's pooled representation ({} training images, "
      "scored on {} validation images): how much of the class a layer holds in a linearly "
      "readable form, whether or not the model's own head can read it there. The probe on layer "
      "{} scores best, {}; the model itself scores {} on the same images, and the embeddings "
      "alone give {}.",
      probe["train_samples"].get<int64_t>(), probe["samples"].get<int64_t>(), best,
      percent(val[best].get<double>()), percent(probe["model_val_accuracy"].get<double>()),
      percent(val.front().get<double>())));
  add_image(page, assets.probe() / "probe.png", "linear probe accuracy per layer");
}

void ablate_section(io::HtmlPage& page, const ReportAssets& assets, const json& ablate) {
  page.section("Head and branch ablation", "ablate");
  const double base = ablate["baseline"]["accuracy"].get<double>();
  size_t top_layer = 0, top_head = 0, minor = 0, total = 0;
  double top = -1e300;
  for (size_t l = 0; l < ablate["heads"].size(); ++l) {
    for (size_t h = 0; h < ablate["heads"][l].size(); ++h) {
      const double lost = base - ablate["heads"][l][h]["accuracy"].get<double>();
      if (lost > top) top = lost, top_layer = l, top_head = h;
      minor += lost < 0.005 ? 1 : 0;
      ++total;
    }
  }
  double attention = 0, mlp = 0;
  for (size_t l = 0; l < ablate["attention"].size(); ++l) {
    attention = std::max(attention, base - ablate["attention"][l]["accuracy"].get<double>());
    mlp = std::max(mlp, base - ablate["mlp"][l]["accuracy"].get<double>());
  }
  page.paragraph(fmt::format(
      "The accuracy lost when one head's output is {} ({} images, intact accuracy {}). The "
      "costliest head is head {} of layer {} ({:.1f} points); {} of the {} heads cost less than "
      "half a point each, so the model could lose them (Michel et al., 2019). Skipping a whole "
      "block's attention costs up to {:.1f} points, its MLP up to {:.1f} (ablate.csv lists each).",
      enum_from_name<AblationMode>(ablate["mode"]) == AblationMode::kMean ? "replaced by its mean"
                                                                          : "zeroed",
      ablate["samples"].get<int64_t>(), percent(base), top_head + 1, top_layer + 1, 100 * top,
      minor, total, 100 * attention, 100 * mlp));
  add_image(page, assets.ablate() / "ablate.png", "accuracy lost per removed head");
}

void cka_section(io::HtmlPage& page, const ReportAssets& assets, const json& cka) {
  page.section("Layer similarity (CKA)", "cka");
  const json& m = cka["matrix"];
  const size_t last = m.size() - 1;
  double neighbours = 0, lowest = 2;
  size_t apart = 0;
  for (size_t l = 0; l + 1 < m.size(); ++l) {
    const double similarity = m[l][l + 1].get<double>();
    neighbours += similarity;
    if (similarity < lowest) lowest = similarity, apart = l;
  }
  page.paragraph(fmt::format(
      "Linear CKA (Kornblith et al., 2019) between the representations of every pair of layers, "
      "over {} validation images: 1 means two layers hold the same information up to a rotation "
      "and scale. Raghu et al. (2021) find a ViT's representation more uniform through depth "
      "than a CNN's. Here neighbouring layers average {:.2f}, the least alike are layers {} and "
      "{} ({:.2f}), and the embeddings and the last layer are at {:.2f}.",
      cka["samples"].get<int64_t>(), last > 0 ? neighbours / static_cast<double>(last) : 1.0, apart,
      apart + 1, last > 0 ? lowest : 1.0, m[0][last].get<double>()));
  add_image(page, assets.cka() / "cka.png", "CKA between layers");
}

void faithfulness_section(io::HtmlPage& page, const ReportAssets& assets, const json& f) {
  page.section("Which saliency map is right", "faithfulness");
  std::string best_deletion, best_insertion;
  double low = 1e300, high = -1e300;
  for (const auto& [name, scores] : f["methods"].items()) {
    if (name == "random") continue;
    if (scores["deletion_auc"].get<double>() < low)
      low = scores["deletion_auc"].get<double>(), best_deletion = name;
    if (scores["insertion_auc"].get<double>() > high)
      high = scores["insertion_auc"].get<double>(), best_insertion = name;
  }
  const json& random = f["methods"]["random"];
  page.paragraph(fmt::format(
      "The deletion and insertion test (Petsiuk et al., 2018) of each map, over {} images: remove "
      "the patches a map calls most important first, and the explained class's probability "
      "should fall fast (low deletion AUC); put them back into an empty image in the same "
      "order, and it should rise fast (high insertion AUC). Here {}; a random order scores "
      "{:.3f} and {:.3f}, the floor a map has to beat to say anything about this model.",
      f["samples"].get<int64_t>(),
      best_deletion == best_insertion
          ? fmt::format("{} is the best by both (deletion AUC {:.3f}, insertion {:.3f})",
                        best_deletion, low, high)
          : fmt::format("{} deletes best (AUC {:.3f}) and {} inserts best ({:.3f})", best_deletion,
                        low, best_insertion, high),
      random["deletion_auc"].get<double>(), random["insertion_auc"].get<double>()));
  add_image(page, assets.faithfulness() / "faithfulness.png", "deletion and insertion curves");
}

void snapshots_section(io::HtmlPage& page, const ReportAssets& assets, const json& s) {
  page.section("Across training", "snapshots");
  const json& epochs = s["epochs"];
  const json& first = s["cka_with_best"].front();
  page.paragraph(fmt::format(
      "The run kept {} snapshots (epochs {} to {}). Left: the logit-lens accuracy of each layer "
      "of each snapshot. Right: the CKA of each snapshot's layers with the same layers of "
      "best.pt, on the same images: how close each layer already was to its final "
      "representation. At epoch {}, the embeddings were at {:.2f} and the last layer at {:.2f}; "
      "early layers usually settle first.",
      epochs.size(), epochs.front().get<int64_t>(), epochs.back().get<int64_t>(),
      epochs.front().get<int64_t>(), first.front().get<double>(), first.back().get<double>()));
  add_image(page, assets.snapshots() / "snapshots.png", "lens accuracy and CKA over training");
}

// What vit sae train measured, when its sae.json is there.
std::string sae_quality_text(const json& sae) {
  if (sae.is_null()) return "";
  return fmt::format(
      " vit sae train scored it on validation images: it explains {} of the variance of the "
      "layer's patch tokens with {:.1f} features a token on average ({} of the features never "
      "fire there), and with its reconstruction spliced in place of the tokens the model's "
      "cross-entropy is {:.3f} against {:.3f} intact and {:.3f} with the tokens zeroed: it "
      "recovers {} of the loss.",
      percent(sae["explained_variance"].get<double>()), sae["l0"].get<double>(),
      percent(sae["dead_fraction"].get<double>()), sae["ce_loss_spliced"].get<double>(),
      sae["ce_loss_clean"].get<double>(), sae["ce_loss_zero_ablated"].get<double>(),
      percent(sae["ce_recovered"].get<double>()));
}

void sae_section(io::HtmlPage& page, const ReportAssets& assets, const json& sae,
                 const json& features) {
  page.section("Sparse autoencoder features", "sae");
  const json& listed = features["features"];
  page.paragraph(fmt::format(
      "The run folder holds a sparse autoencoder (sae/sae.safetensors) on layer {}: it rewrites "
      "each patch token of that layer as a sparse sum of {} learned directions, the features "
      "(Bricken et al., 2023).{} Below, its {} most frequent features on {} validation images, "
      "each with the images on which it fires most, its strongest patch outlined "
      "(features.json lists them; vit sae features shows more).",
      features["layer"].get<int64_t>(), features["frequency"].size(), sae_quality_text(sae),
      listed.size(), features["samples"].get<int64_t>()));
  std::vector<std::vector<std::string>> rows;
  for (const json& f : listed)
    rows.push_back({std::to_string(f["feature"].get<int64_t>()),
                    percent(f["frequency"].get<double>()),
                    fmt::format("{:.3g}", f["mean_activation"].get<double>())});
  page.table({"feature", "fires on (patch tokens)", "mean activation where it fires"}, rows);
  for (const json& f : listed)
    add_image(page, assets.sae_features() / f["png"].get<std::string>(),
              fmt::format("feature {}", f["feature"].get<int64_t>()));
}

}  // namespace

void inside_sections(io::HtmlPage& page, const ReportAssets& assets, const ReportNumbers& numbers) {
  lens_section(page, assets, numbers.lens);
  probe_section(page, assets, numbers.probe);
  ablate_section(page, assets, numbers.ablate);
  cka_section(page, assets, numbers.cka);
  faithfulness_section(page, assets, numbers.faithfulness);
  if (!numbers.snapshots.is_null()) snapshots_section(page, assets, numbers.snapshots);
  if (!numbers.sae_features.is_null()) sae_section(page, assets, numbers.sae, numbers.sae_features);
}

}  // namespace vit::cli
