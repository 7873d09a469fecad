// vit report: one self-contained report.html per training run. Runs the
// analyses on the run's best.pt (eval on the test split, rollout, attention
// distance, one image's attention, position embeddings, filters, saliency)
// into RUN/report/, then embeds their pictures and numbers in RUN/report.html.
#include "cmd_report.hpp"

#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "analysis_inputs.hpp"
#include "cmd_attention.hpp"
#include "cmd_attn_distance.hpp"
#include "cmd_eval.hpp"
#include "cmd_filters.hpp"
#include "cmd_pos_embed.hpp"
#include "cmd_rollout.hpp"
#include "cmd_saliency.hpp"
#include "report_page.hpp"
#include "vit/atomic_write.hpp"
#include "vit/data/reuse_loaded_data.hpp"
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

// A command's options with the report's common flags, best.pt and an output folder.
template <typename Options>
Options analysis(const ReportOptions& o, const std::string& checkpoint, const fs::path& out) {
  Options options;
  options.common = o.common;
  options.model.checkpoint = checkpoint;
  options.model.out = out.string();
  return options;
}

// Every analysis on best.pt, each into its own folder under assets.root.
void run_analyses(const ReportOptions& o, const std::string& checkpoint,
                  const ReportAssets& assets) {
  run_eval(analysis<EvalOptions>(o, checkpoint, assets.eval()));
  auto rollout = analysis<RolloutCommandOptions>(o, checkpoint, assets.rollout());
  rollout.samples = o.samples;
  run_rollout(rollout);
  run_attn_distance(analysis<AttnDistanceOptions>(o, checkpoint, assets.distance()));
  run_attention(analysis<AttentionOptions>(o, checkpoint, assets.attention()));
  run_pos_embed(analysis<PosEmbedOptions>(o, checkpoint, assets.pos_embed()));
  run_filters(analysis<FiltersOptions>(o, checkpoint, assets.filters()));
  for (const std::string method : {"grad-rollout", "grad"}) {
    auto saliency = analysis<SaliencyOptions>(o, checkpoint, assets.saliency(method));
    saliency.samples = o.samples;
    saliency.method = method;
    run_saliency(saliency);
  }
}

}  // namespace

int run_report(const ReportOptions& o) {
  apply_common_options(o.common);
  const auto start = std::chrono::steady_clock::now();
  const fs::path run = fs::path(o.run);
  check_run(run);
  const ReportAssets assets{run / "report"};
  const data::ReuseLoadedData read_the_dataset_once;
  run_analyses(o, run_checkpoint(run).string(), assets);
  const fs::path page = run / "report.html";
  write_text_atomically(page.string(), report_page(run, assets));
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
