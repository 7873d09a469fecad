// vit report: one self-contained report.html per training run. Opens the
// run's best.pt and its dataset once, runs the analyses on them in process
// (eval on the test split, rollout, attention distance, one image's attention,
// position embeddings, filters, saliency, logit lens, probes, ablation, CKA,
// faithfulness, the snapshots across training when the run kept any, and the
// features of the sparse autoencoder in RUN/sae/ when there is one), each writing its files
// into RUN/report/ as its command would, then embeds their pictures and numbers in RUN/report.html.
#include "report/cmd_report.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "analyses/cmd_ablate.hpp"
#include "analyses/cmd_attention.hpp"
#include "analyses/cmd_attn_distance.hpp"
#include "analyses/cmd_cka.hpp"
#include "analyses/cmd_faithfulness.hpp"
#include "analyses/cmd_filters.hpp"
#include "analyses/cmd_lens.hpp"
#include "analyses/cmd_pos_embed.hpp"
#include "analyses/cmd_probe.hpp"
#include "analyses/cmd_rollout.hpp"
#include "analyses/cmd_sae.hpp"
#include "analyses/cmd_saliency.hpp"
#include "cli/input_images.hpp"
#include "commands/cmd_eval.hpp"
#include "report/report_page.hpp"
#include "report/report_snapshots.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;

// A run folder that `vit train` finished: these files, or a one-line error.
void check_run(const fs::path& run) {
  if (!fs::is_directory(run))
    throw Error(run.string() + ": no such run folder; pass --run DIR, a folder vit train wrote");
  for (const char* name : {"config.json", "metrics.jsonl"}) {
    if (!fs::is_regular_file(run / name))
      throw Error((run / name).string() +
                  ": missing; vit report needs a training run's folder (config.json, "
                  "metrics.jsonl, best.pt)");
  }
}

// best.pt, or best.safetensors (e.g. a run exported for another vit version).
fs::path run_checkpoint(const fs::path& run) {
  for (const char* name : {"best.pt", "best.safetensors"})
    if (fs::is_regular_file(run / name)) return run / name;
  throw Error((run / "best.pt").string() +
              ": missing; vit report needs a training run's folder (config.json, "
              "metrics.jsonl, best.pt)");
}

// sae.json as vit sae train wrote it; null when there is none.
nlohmann::json sae_scores(const fs::path& path) {
  if (!fs::is_regular_file(path)) return nullptr;
  std::ifstream in(path);
  const nlohmann::json scores = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const auto numeric = [&](const char* key) {
    return scores.contains(key) && scores[key].is_number();
  };
  if (scores.is_discarded() || !scores.is_object() || !numeric("explained_variance") ||
      !numeric("l0") || !numeric("dead_fraction") || !numeric("ce_loss_clean") ||
      !numeric("ce_loss_spliced") || !numeric("ce_loss_zero_ablated") || !numeric("ce_recovered"))
    throw Error(path.string() + ": not the sae.json vit sae train writes");
  return scores;
}

// A command's options with the report's common flags and an output folder.
template <typename Options>
Options analysis(const ReportOptions& o, const fs::path& out) {
  Options options;
  options.common = o.common;
  options.model.out = out.string();
  return options;
}

// Every analysis on the opened best.pt, each into its own folder under
// assets.root; the JSON documents the page quotes.
ReportNumbers run_analyses(const ReportOptions& o, const fs::path& run, OpenedModel& opened,
                           const ReportAssets& assets) {
  ReportNumbers numbers;
  numbers.eval = write_eval(opened, analysis<EvalOptions>(o, assets.eval()));
  auto rollout = analysis<RolloutCommandOptions>(o, assets.rollout());
  rollout.samples = o.samples;
  numbers.rollout = write_rollout(opened, rollout);
  numbers.distance =
      write_attn_distance(opened, analysis<AttnDistanceOptions>(o, assets.distance()));
  write_attention(opened, analysis<AttentionOptions>(o, assets.attention()));
  write_pos_embed(opened, analysis<PosEmbedOptions>(o, assets.pos_embed()));
  numbers.filters = write_filters(opened, analysis<FiltersOptions>(o, assets.filters()));
  for (const SaliencyMethod method : {SaliencyMethod::kGradRollout, SaliencyMethod::kGrad}) {
    auto saliency = analysis<SaliencyOptions>(o, assets.saliency(method));
    saliency.samples = o.samples;
    saliency.method = method;
    write_saliency(opened, saliency);
  }
  numbers.lens = write_lens(opened, analysis<LensOptions>(o, assets.lens()));
  numbers.probe = write_probe(opened, analysis<ProbeOptions>(o, assets.probe()));
  numbers.ablate = write_ablate(opened, analysis<AblateOptions>(o, assets.ablate()));
  numbers.cka = write_cka(opened, analysis<CkaOptions>(o, assets.cka()));
  numbers.faithfulness =
      write_faithfulness(opened, analysis<FaithfulnessOptions>(o, assets.faithfulness()));
  const auto snapshots = list_snapshots(run.string());
  if (!snapshots.empty()) {
    const uint64_t seed = o.common.seed.value_or(opened.loaded.config.seed);
    numbers.snapshots =
        write_snapshot_analysis(opened, snapshots, assets.snapshots(), kLayerSamples, seed);
  }
  const fs::path sae = default_sae_file(opened.loaded);
  if (fs::is_regular_file(sae)) {
    auto features = analysis<SaeFeaturesOptions>(o, assets.sae_features());
    features.sae = sae.string();
    numbers.sae_features = write_sae_features(opened, features);
    numbers.sae = sae_scores(sae.parent_path() / "sae.json");
  }
  return numbers;
}

}  // namespace

int run_report(const ReportOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path run = fs::path(o.run);
  check_run(run);
  ModelSource best;
  best.checkpoint = run_checkpoint(run).string();
  OpenedModel opened = open_model(o.common, best);  // applies the common options
  const ReportAssets assets{run / "report"};
  const ReportNumbers numbers = run_analyses(o, run, opened, assets);
  const fs::path page = run / "report.html";
  write_text_atomically(page.string(), report_page(run, assets, numbers));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("wrote {} in {:.1f} s (pictures and numbers in {})", page.string(), seconds,
               assets.root.string());
  return 0;
}

std::shared_ptr<ReportOptions> register_report(Cli& cli) {
  auto [options, cmd] = add_command<ReportOptions>(
      cli, "report", "One self-contained report.html of a training run, with every analysis",
      run_report);
  cmd->add_option("--run", options->run, "the run folder vit train wrote")->capture_default_str();
  cmd->add_option("--samples", options->samples,
                  "validation images shown with rollout and saliency maps")
      ->check(at_least_one())
      ->capture_default_str();
  return options;
}

}  // namespace vit::cli
