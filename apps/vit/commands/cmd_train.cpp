// vit train: a run folder with config.json, metrics, checkpoints, train.log and curves.png.
#include "commands/cmd_train.hpp"

#include <sys/resource.h>

#include <filesystem>
#include <thread>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "cli/config_files.hpp"
#include "vit/atomic_write.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/data/download/dataset_download.hpp"
#include "vit/data/download/hub_download.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"
#include "vit/infer/precision.hpp"
#include "vit/io/figures.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/tensorboard.hpp"
#include "vit/train/distributed.hpp"
#include "vit/train/metrics_log.hpp"
#include "vit/train/run_dir.hpp"
#include "vit/train/step_profiler.hpp"
#include "vit/train/stop_signal.hpp"
#include "vit/train/trainer.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/weights/pretrained.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;

// --profile starts after this many steps, once allocations and caches have settled.
constexpr int64_t kProfileWarmupSteps = 10;

// The config of the run: the file (+ --set), or, when resuming without
// --config, the checkpoint's own config (+ --set).
// --seed replaces the config's seed, so config.json records the seed used.
Config resolve_config(const TrainOptions& o) {
  Config c;
  if (o.config) {
    c = load_config(*o.config, o.overrides);
  } else {
    if (!o.resume) throw Error("vit train needs --config FILE (or --resume CKPT)");
    c = read_checkpoint_meta(*o.resume).config;
    for (const auto& assignment : o.overrides)
      apply_override(c, assignment);
    c.validate();
  }
  if (o.common.seed) c.seed = *o.common.seed;
  if (o.init) {
    if (o.resume)
      throw Error(
          "vit train: --init and --resume are exclusive (--init starts a new run from "
          "pretrained weights; --resume continues a run with its own)");
    c.train.init = *o.init;
  }
  if (c.model.num_classes == 0)
    throw Error(
        "vit train: model.num_classes is 0 (a backbone without a head); set the classes "
        "to train, e.g. --set model.num_classes=10");
  if (!c.train.init.empty()) {
    data::fetch_hf_hub_if_named(c.train.init);
    if (const auto architecture = pretrained_architecture(c.train.init, c.model)) {
      c.model = *architecture;
      c.validate();
      spdlog::info(
          "train.init {}: its architecture (dim {}, depth {}, heads {}, {} registers, "
          "LayerScale {}), with the config's image_size {} and num_classes {}",
          c.train.init, c.model.dim, c.model.depth, c.model.heads, c.model.registers,
          c.model.layer_scale() ? "on" : "off", c.model.image_size, c.model.num_classes);
    }
  }
  return c;
}

// --out, or the folder of the checkpoint being resumed (through links such as
// runs/latest, so that the link is not pointed at itself), or a new folder.
std::string choose_run_dir(const TrainOptions& o, const Config& config) {
  if (!o.out.empty()) return o.out;
  if (o.resume) return fs::canonical(*o.resume).parent_path().string();
  return new_run_dir(config.name, "");
}

// runs/latest follows every run that leaves a last.pt to resume from:
// finished, interrupted or stopped by an error. The run's results are on disk
// by then, so a link that cannot be written (a read-only working folder) is a
// warning, not a failure.
void point_latest_at_run(const std::string& run_dir) {
  if (!fs::exists(fs::path(run_dir) / "last.pt")) return;
  try {
    point_latest_at(run_dir);
  } catch (const Error& e) {
    spdlog::warn("runs/latest not updated: {}", e.what());
  }
}

// Everything logged from here on also goes to DIR/train.log.
void log_to_file(const std::string& path) {
  auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  spdlog::default_logger()->sinks().push_back(file_sink);
  spdlog::flush_on(spdlog::level::info);  // a crash must not lose the last lines
}

// curves.png, also as an image summary in the run's TensorBoard events
// (events_file; none when empty) at the last step.
void draw_curves(const std::string& run_dir, const std::string& events_file, int64_t step) {
  io::TrainingCurves curves;
  for (const auto& r : MetricsLog::read(run_dir + "/metrics.jsonl")) {
    curves.train_step.push_back(double(r.step));
    curves.train_loss.push_back(r.train_loss);
    curves.train_acc.push_back(r.train_acc);
    curves.val_step.push_back(double(r.step));
    curves.val_loss.push_back(r.val_loss);
    curves.val_acc.push_back(r.val_acc);
  }
  const std::vector<uint8_t> png =
      io::write_png(run_dir + "/curves.png",
                    io::plot_training_curves(curves, fs::path(run_dir).filename().string()));
  if (events_file.empty()) return;
  io::EventsWriter::append(events_file)
      .png_image("curves", std::string_view(reinterpret_cast<const char*>(png.data()), png.size()),
                 step);
}

void log_summary(const TrainSummary& s, const std::string& run_dir) {
  spdlog::info("stopped: {} after {} steps ({:.2f} epochs, {:.0f} s)", s.stop_text(), s.steps,
               s.epochs, s.train_seconds);
  spdlog::info("best val acc {:.4f} at step {}", s.best_val_acc, s.best_step);
  if (s.test)
    spdlog::info("test acc {:.4f}, test loss {:.4f} ({} images, best.pt)", s.test->accuracy,
                 s.test->loss, s.test->count);
  if (s.stop_reason == StopReason::kInterrupted)
    spdlog::info("continue with: vit train --resume {}/last.pt", run_dir);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  spdlog::info("peak memory {:.0f} MiB", usage.ru_maxrss / 1024.0);  // ru_maxrss is in KiB on Linux
  spdlog::info("run folder: {}", run_dir);
}

// Under torchrun: each rank's device (cuda:LOCAL_RANK for "auto" on a GPU
// machine), its share of the cores, its logging, and the process group.
std::unique_ptr<ProcessGroup> join_world(const DistributedEnv& env, const TrainOptions& o,
                                         const Config& config, c10::Device* device) {
  if (is_auto_device(device_spec(o.common.device, config.device)) && device->is_cuda())
    *device = resolve_device("cuda:" + std::to_string(env.local_rank));
  if (o.common.threads == 0 && config.threads == 0) {
    // The ranks on one machine share its cores, as torchrun's OMP_NUM_THREADS intends.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set_threads(std::max(1, cores / env.local_world_size));
  }
  if (env.rank != 0) {
    // Rank 0 reports for all; the others speak only of trouble, with their rank.
    spdlog::set_level(spdlog::level::warn);
    spdlog::set_pattern(fmt::format("[%Y-%m-%d %H:%M:%S.%e] [rank {}] [%^%l%$] %v", env.rank));
  }
  const DistBackend backend = choose_backend(config.train.dist_backend, *device);
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.train.dist_timeout_s * 1000.0));
  auto group = ProcessGroup::join(env, backend, timeout, *device);
  spdlog::info(
      "rank 0 of {} ({} backend, {} on this machine); train.batch_size {} is the global "
      "batch, {} images per rank",
      env.world_size, enum_name(backend), env.local_world_size, config.train.batch_size,
      config.train.batch_size / env.world_size);
  return group;
}

int run_train(const TrainOptions& o) {
  const Config config = resolve_config(o);
  apply_common_options(o.common, &config);
  c10::Device device = chosen_device(o.common, &config);
  const auto env = distributed_env();
  // Under torchrun the first rank of each machine downloads before the ranks
  // meet; the others wait for it in the join (at most train.dist_timeout_s).
  if (config.data.download && (!env || env->local_rank == 0)) data::download_dataset(config.data);
  std::unique_ptr<ProcessGroup> group;
  if (env) group = join_world(*env, o, config, &device);
  const bool main_rank = !group || group->is_main();
  const std::string run_dir = choose_run_dir(o, config);
  if (main_rank) {
    fs::create_directories(run_dir);
    log_to_file(run_dir + "/train.log");
    write_text_atomically(run_dir + "/config.json", config_to_json_string(config));
  }
  const data::DataSplits splits = data::load_data(config);
  install_stop_signal_handlers();
  Trainer trainer(config, splits, device, run_dir, o.resume, group.get());
  const int threads = at::get_num_threads();
  const PrecisionChoice& precision = trainer.precision();  // train.precision, chosen once
  spdlog::info("run {} on {} ({} thread{}), {}", run_dir, device.str(), threads,
               threads == 1 ? "" : "s", precision.description);
  if (precision.warning) spdlog::warn("{}", *precision.warning);
  if (o.profile && main_rank)
    trainer.profile(StepProfiler(*o.profile, kProfileWarmupSteps, o.profile_steps));
  TrainSummary summary;
  try {
    summary = trainer.fit();
    if (main_rank) draw_curves(run_dir, summary.events_file, summary.steps);
  } catch (...) {
    if (main_rank) point_latest_at_run(run_dir);
    throw;
  }
  if (main_rank) {
    log_summary(summary, run_dir);
    point_latest_at_run(run_dir);
  }
  return summary.stop_reason == StopReason::kInterrupted ? 130 : 0;
}

}  // namespace

std::shared_ptr<TrainOptions> register_train(Cli& cli) {
  auto [options, cmd] = add_command<TrainOptions>(
      cli, "train", "Train a ViT from a JSON config (early stopping, checkpoints)", run_train);
  cmd->add_option("--config", options->config,
                  "JSON config file, or a shipped config's name: --config cifar10 (vit config "
                  "--list)")
      ->transform(config_file());
  cmd->add_option("--set", options->overrides, "override a config key, e.g. --set train.epochs=5");
  cmd->add_option("--out", options->out, "run folder (default: runs/<name>-<timestamp>)");
  cmd->add_option("--resume", options->resume,
                  "continue from a checkpoint, e.g. runs/latest/last.pt")
      ->check(CLI::ExistingFile);
  cmd->add_option("--init", options->init,
                  "start from pretrained weights: a vit .pt, a timm .safetensors, a timm hub "
                  "folder or hf-hub:ORG/NAME (train.init)")
      ->check(checkpoint_source());
  cmd->add_option("--profile", options->profile,
                  "record steps 11.. with LibTorch's profiler: FILE gets each operator's time per "
                  "step (JSON), FILE.trace.json a Chrome trace");
  cmd->add_option("--profile-steps", options->profile_steps, "steps to profile (--profile)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return options;
}

}  // namespace vit::cli
