// Each section: a heading, a few sentences that say what the picture shows and
// what this run's numbers are, then the picture itself, embedded.
#include "report/report_page.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vit/analysis/rollout.hpp"
#include "vit/data/file_bytes.hpp"
#include "vit/error.hpp"
#include "vit/io/html_page.hpp"
#include "vit/train/metrics_log.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot read (vit report wrote it a moment ago)");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json read_json(const fs::path& path) {
  return json::parse(read_text(path));
}

// "grayscale", "RGB" or "4-channel", for the overview's description of the images.
std::string colour_kind(int64_t channels) {
  if (channels == 1) return "grayscale";
  if (channels == 3) return "RGB";
  return std::to_string(channels) + "-channel";
}

void overview(io::HtmlPage& page, const fs::path& run, const json& config,
              const std::vector<ValidationRecord>& records, const json& eval) {
  page.section("Overview", "overview");
  const json& m = config["model"];
  const double best = records.empty() ? 0.0 : records.back().best_val_acc;
  const double seconds = records.empty() ? 0.0 : records.back().elapsed_s;
  page.paragraph(fmt::format(
      "Run {}: a Vision Transformer trained on {} ({} classes, {}x{} {} images), "
      "cut into {}x{} patches of {} px, with {} layers of {} heads and width {}. It trained for "
      "{:.1f} epochs ({} steps) in {:.0f} s. The best validation accuracy was {}; on the test "
      "split best.pt reaches {} ({} images).",
      fs::canonical(run).filename().string(), config["data"]["dataset"].get<std::string>(),
      m["num_classes"].get<int64_t>(), m["image_size"].get<int64_t>(),
      m["image_size"].get<int64_t>(), colour_kind(m["channels"].get<int64_t>()),
      m["image_size"].get<int64_t>() / m["patch_size"].get<int64_t>(),
      m["image_size"].get<int64_t>() / m["patch_size"].get<int64_t>(),
      m["patch_size"].get<int64_t>(), m["depth"].get<int64_t>(), m["heads"].get<int64_t>(),
      m["dim"].get<int64_t>(), records.empty() ? 0.0 : records.back().epoch,
      records.empty() ? 0 : records.back().step, seconds, percent(best),
      percent(eval["accuracy"].get<double>()), eval["images"].get<int64_t>()));
  page.paragraph(
      "The sections below first show how training went and how well the model classifies, then "
      "look inside it: where its attention goes, how far its heads look, what it learned about "
      "positions and patches, which pixels decide its answers, in which layer the class becomes "
      "readable, which heads matter, and which saliency map the model actually uses.");
}

void curves(io::HtmlPage& page, const fs::path& run, const std::vector<ValidationRecord>& records) {
  page.section("Training curves", "curves");
  page.paragraph(
      "Loss and accuracy against optimizer steps, on the training batches and on the held-out "
      "validation split. Validation accuracy that levels off while training accuracy keeps "
      "rising means the model has started to memorise rather than learn.");
  if (fs::exists(run / "curves.png")) {
    add_image(page, run / "curves.png", "training curves");
  } else {
    page.paragraph("(This run has no curves.png.)");
  }
  std::vector<std::vector<std::string>> rows;
  const size_t first = records.size() > 8 ? records.size() - 8 : 0;
  for (size_t i = first; i < records.size(); ++i) {
    const auto& r = records[i];
    rows.push_back({std::to_string(r.step), fmt::format("{:.2f}", r.epoch),
                    fmt::format("{:.4f}", r.train_loss), fmt::format("{:.4f}", r.val_loss),
                    percent(r.val_acc), fmt::format("{:.2e}", r.lr),
                    fmt::format("{:.0f}", r.images_per_sec)});
  }
  page.paragraph(records.size() > 8 ? "The last eight validations:" : "Every validation:");
  page.table({"step", "epoch", "train loss", "val loss", "val acc", "lr", "images/s"}, rows);
}

// The most frequent off-diagonal cell of the confusion matrix: (true, predicted, count).
std::tuple<size_t, size_t, int64_t> top_confusion(const json& confusion) {
  std::tuple<size_t, size_t, int64_t> top{0, 0, 0};
  for (size_t t = 0; t < confusion.size(); ++t)
    for (size_t p = 0; p < confusion[t].size(); ++p)
      if (t != p && confusion[t][p].get<int64_t>() > std::get<2>(top))
        top = {t, p, confusion[t][p].get<int64_t>()};
  return top;
}

void metrics(io::HtmlPage& page, const ReportAssets& assets, const json& eval) {
  page.section("Test metrics", "metrics");
  const auto& classes = eval["classes"];
  std::vector<std::vector<std::string>> rows;
  std::string weakest;
  double weakest_acc = 2;
  for (size_t k = 0; k < classes.size(); ++k) {
    const std::string name = classes[k].get<std::string>();
    const json& acc = eval["per_class_accuracy"][name];
    int64_t count = 0;
    for (const auto& c : eval["confusion"][k])
      count += c.get<int64_t>();
    rows.push_back({std::to_string(k), name, std::to_string(count),
                    acc.is_null() ? "-" : percent(acc.get<double>())});
    if (!acc.is_null() && acc.get<double>() < weakest_acc) {
      weakest_acc = acc.get<double>();
      weakest = name;
    }
  }
  const auto [t, p, n] = top_confusion(eval["confusion"]);
  page.paragraph(fmt::format(
      "best.pt on the test split: accuracy {}, mean cross-entropy {:.4f}, over {} images. The "
      "weakest class is {} ({}); the most common mistake is {} taken for {} ({} images).",
      percent(eval["accuracy"].get<double>()), eval["loss"].get<double>(),
      eval["images"].get<int64_t>(), weakest, percent(weakest_acc), classes[t].get<std::string>(),
      classes[p].get<std::string>(), n));
  page.table({"index", "class", "test images", "accuracy"}, rows);
  page.paragraph(
      "The confusion matrix: row = true class, column = predicted class, each row as fractions "
      "of its class. A perfect model has a dark diagonal; dark cells off it are the pairs the "
      "model mixes up.");
  add_image(page, assets.eval() / "confusion.png", "confusion matrix");
  page.section("Worst images", "worst");
  page.paragraph(
      "The test images with the highest loss, captioned predicted / true (red when wrong). They "
      "are often ambiguous or mislabelled images, or show what the model has not learned.");
  add_image(page, assets.eval() / "worst.png", "highest-loss test images");
}

// What the rollout follows attention back from, for the page's prose.
const char* rollout_source_text(RolloutSource source) {
  switch (source) {
    case RolloutSource::kPatchMean:
      return "mean of the patch tokens (this model pools by mean)";
    case RolloutSource::kAttentionPool:
      return "patch tokens as the attention pool's query weighs them (this model pools by "
             "attention)";
    case RolloutSource::kClassToken:
      break;
  }
  return "class token the classifier reads";
}

void attention_sections(io::HtmlPage& page, const ReportAssets& assets, const json& rollout,
                        const json& distance) {
  page.section("Attention rollout", "rollout");
  page.paragraph(fmt::format(
      "Attention rollout (Abnar & Zuidema, 2020) follows attention through all layers, adding "
      "the residual connection, to estimate how much each patch feeds the {}. Red patches are "
      "where the classification draws its information from; a good model looks at the object, "
      "not the background.",
      rollout_source_text(
          enum_from_name<RolloutSource>(rollout["source"]).value_or(RolloutSource::kClassToken))));
  add_image(page, assets.rollout() / "grid.png", "attention rollout maps");

  const auto& d = distance["distance"];
  const auto range = [](const json& layer) {
    double lo = 1e300, hi = 0;
    for (const auto& v : layer) {
      lo = std::min(lo, v.get<double>());
      hi = std::max(hi, v.get<double>());
    }
    return fmt::format("{:.1f} to {:.1f} px", lo, hi);
  };
  page.section("Mean attention distance", "distance");
  page.paragraph(fmt::format(
      "For every head, how far (in pixels) a patch looks on average, weighted by its attention, "
      "over {} validation images: the ViT paper's Fig. 7 (right), the analogue of a CNN's "
      "receptive field. Here the heads of layer 1 look {}, those of the last layer {}. Heads "
      "that look far in early layers integrate the whole image at once, which a CNN cannot.",
      distance["samples"].get<int64_t>(), range(d.front()), range(d.back())));
  add_image(page, assets.distance() / "attn_distance.png", "mean attention distance");

  page.section("Attention of one image, per head", "attention");
  page.paragraph(
      "The raw attention of every head in every layer for one validation image, from the token "
      "the classifier reads (the class token, or the mean of the patch tokens for mean "
      "pooling). Different heads specialise: some stay local, some spread over the object.");
  add_image(page, assets.attention() / "attention.png", "attention per layer and head");
}

void embedding_sections(io::HtmlPage& page, const ReportAssets& assets, const json& filters) {
  page.section("Position embeddings", "pos-embed");
  page.paragraph(
      "The model is told where each patch lies only through a learned position embedding. Each "
      "tile shows how similar one patch's embedding is to every other's (cosine similarity): "
      "when the bright spot of each tile sits at the tile's own position, with its row and "
      "column lit up, the model has learned the 2-D layout of the image by itself (ViT paper, "
      "Fig. 7, centre).");
  add_image(page, assets.pos_embed() / "pos_embed.png", "position embedding similarity");

  const auto& ratios = filters["explained_variance_ratio"];
  double first5 = 0;
  for (size_t i = 0; i < std::min<size_t>(5, ratios.size()); ++i)
    first5 += ratios[i].get<double>();
  page.section("Patch-embedding filters", "filters");
  page.paragraph(fmt::format(
      "The first layer projects every {0}x{0} patch onto {1} learned filters. These are their "
      "principal components, the patterns the filters are built from, in order of variance (ViT "
      "paper, Fig. 7, left). The first five explain {2} of the variance; smooth blobs, edges "
      "and stripes resemble a CNN's first layer.",
      filters["patch_size"].get<int64_t>(), filters["filters"].get<int64_t>(), percent(first5)));
  add_image(page, assets.filters() / "filters.png", "principal components of the filters");
}

void saliency_sections(io::HtmlPage& page, const ReportAssets& assets) {
  page.section("Saliency", "saliency");
  page.paragraph(
      "Which parts of the image decide the answer. Gradient rollout (Chefer et al., 2021) weighs "
      "each layer's attention by its gradient with respect to the predicted class's logit, "
      "keeps the positive part and rolls it out over the layers: unlike plain rollout, it is "
      "specific to the class being explained.");
  add_image(page, assets.saliency(SaliencyMethod::kGradRollout) / "grid.png",
            "gradient rollout maps");
  page.paragraph(
      "The plain gradient, |d logit / d pixel|: the pixels where a small change would move the "
      "predicted class's score most. It is noisier, but works at pixel resolution.");
  add_image(page, assets.saliency(SaliencyMethod::kGrad) / "grid.png",
            "input-gradient saliency maps");
}

}  // namespace

void add_image(io::HtmlPage& page, const fs::path& png, const std::string& alt,
               const std::string& caption) {
  page.image(data::read_file_bytes(png), alt, caption);
}

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", 100 * fraction);
}

std::string report_page(const fs::path& run, const ReportAssets& assets,
                        const ReportNumbers& numbers) {
  const json config = read_json(run / "config.json");
  const std::vector<ValidationRecord> records = MetricsLog::read((run / "metrics.jsonl").string());
  io::HtmlPage page("vit report: " + fs::canonical(run).filename().string());
  overview(page, run, config, records, numbers.eval);
  curves(page, run, records);
  metrics(page, assets, numbers.eval);
  attention_sections(page, assets, numbers.rollout, numbers.distance);
  embedding_sections(page, assets, numbers.filters);
  saliency_sections(page, assets);
  inside_sections(page, assets, numbers);
  page.section("Configuration", "config");
  page.paragraph("The fully resolved config this run trained with (config.json).");
  page.preformatted(config.dump(2));
  return page.html();
}

}  // namespace vit::cli
