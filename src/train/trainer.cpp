#include "vit/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "vit/atomic_write.hpp"
#include "vit/data/batch_loader.hpp"
#include "vit/data/epoch_order.hpp"
#include "vit/data/split_loader.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"
#include "vit/peak_memory.hpp"
#include "vit/train/distributed.hpp"
#include "vit/train/distributed_evaluation.hpp"
#include "vit/train/fine_tune.hpp"
#include "vit/train/lr_schedule.hpp"
#include "vit/train/metrics_log.hpp"
#include "vit/train/model_ema.hpp"
#include "vit/train/progress.hpp"
#include "vit/train/snapshots.hpp"
#include "vit/train/stop_signal.hpp"
#include "vit/train/tensorboard_log.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/train/training_step.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Steps between two reads of the step statistics. On the CPU every operator
// has finished when it returns, so reading costs nothing; a GPU runs ahead of
// the host, and each read makes the host wait until it has caught up.
constexpr int64_t kCudaReadEvery = 25;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// "nan", "inf" or "-inf", the same on every platform (printf may say "-nan").
std::string non_finite_text(double value) {
  if (std::isnan(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

// Run time recorded in metrics.jsonl up to `up_to_step`: the fallback for
// checkpoints written before they carried their own elapsed time.
double recorded_elapsed(const std::string& run_dir, int64_t up_to_step) {
  const auto path = run_dir + "/metrics.jsonl";
  if (!fs::exists(path)) return 0.0;
  double elapsed = 0.0;
  for (const auto& r : MetricsLog::read(path))
    if (r.step <= up_to_step) elapsed = r.elapsed_s;
  return elapsed;
}

// The training loader hands out micro-batches: an optimizer step reads
// train.accum_steps of them in a row, the whole batch's images in its order.
data::LoaderOptions train_loader_options(const Config& config, c10::Device device,
                                         const ProcessGroup* group) {
  auto options = data::loader_options(config, device, /*train=*/true);
  options.batch_size = config.train.micro_batch_size();
  if (group) {
    const int64_t world = group->world_size();
    if (options.batch_size % world != 0)
      throw Error(fmt::format(
          "train.batch_size {} / train.accum_steps {} is {} images a micro-batch, which {} ranks "
          "cannot share evenly; make it a multiple of the world size",
          config.train.batch_size, config.train.accum_steps, options.batch_size, world));
    options.shard_index = group->rank();
    options.shard_count = group->world_size();
  }
  return options;
}

// Every parameter and buffer from rank 0, so all ranks start from the same
// weights whatever their seeds or files said.
void broadcast_model(VisionTransformer& model, ProcessGroup& group) {
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) {
    auto data = p.data();
    group.broadcast_from_main(data, "the weight broadcast");
  }
  for (auto& b : model->buffers())
    group.broadcast_from_main(b, "the weight broadcast");
}

}  // namespace

Trainer::Trainer(Config config, data::DataSplits splits, c10::Device device, std::string run_dir,
                 std::optional<std::string> resume, ProcessGroup* group)
    : config_(std::move(config)),
      splits_(std::move(splits)),
      device_(device),
      run_dir_(std::move(run_dir)),
      resume_(std::move(resume)),
      group_(group),
      early_stopping_(config_.train.early_stop_patience, config_.train.early_stop_min_delta),
      read_every_(device_.is_cuda() ? kCudaReadEvery : 1) {
  if (static_cast<int64_t>(splits_.classes().size()) != config_.model.num_classes)
    throw Error(fmt::format("the dataset has {} classes but model.num_classes is {}",
                            splits_.classes().size(), config_.model.num_classes));
  if (splits_.val_size() == 0)
    throw Error(
        "the validation split is empty; set data.val_size > 0 (early stopping and best.pt need "
        "it)");
  torch::manual_seed(config_.seed);
  model_ = VisionTransformer(config_.model);
  model_->to(device_);
  model_->set_grad_checkpointing(config_.train.grad_checkpointing);
  prepare_for_fine_tuning();
  training_step_ = std::make_unique<TrainingStep>(
      model_, config_.train, choose_precision(config_.train.precision, device_), device_, group_);
  if (config_.train.ema)
    ema_ = std::make_unique<ModelEma>(model_, training_step_->optimizer(), *config_.train.ema);
  train_loader_ = data::loader_for(splits_, data::SplitName::kTrain, config_,
                                   train_loader_options(config_, device_, group_));
  val_loader_ = eval_loader(data::SplitName::kVal);
  // An optimizer step reads accum_steps micro-batches; keeping the last
  // partial batch, the epoch's last step reads what is left.
  steps_per_epoch_ = data::epoch_batches(train_loader_->batches_per_epoch(),
                                         config_.train.accum_steps, config_.data.drop_last);
  if (steps_per_epoch_ == 0)
    throw Error(
        fmt::format("the training split has {} images, fewer than one batch of train.batch_size {}",
                    splits_.train_size(), config_.train.batch_size));
}

Trainer::~Trainer() = default;

int64_t Trainer::cuda_graph_replays() const {
  return training_step_->cuda_graph_replays();
}

void Trainer::profile(StepProfiler profiler) {
  training_step_->profile(std::move(profiler));
}

const PrecisionChoice& Trainer::precision() const {
  return training_step_->precision();
}

bool Trainer::is_main() const {
  return !group_ || group_->is_main();
}

// Every rank must train the same model on the same data: the resolved
// config (its hash) must match, and the weights start as rank 0's.
void Trainer::check_ranks_agree() {
  group_->require_same(std::hash<std::string>{}(config_to_json_string(config_)),
                       "the resolved config (config file, --set, --seed)");
  // "auto" may pick bf16 on one machine and fp32 on another.
  group_->require_same(static_cast<uint64_t>(precision().precision),
                       "the precision (train.precision auto picks per machine; set it explicitly)");
  broadcast_model(model_, *group_);
}

// Before the optimizer lays the parameters out: pretrained weights for a new
// run (a resumed run restores its own), then the frozen parameters, which the
// optimizer leaves out; a resumed run freezes them again.
void Trainer::prepare_for_fine_tuning() {
  const TrainConfig& t = config_.train;
  if (!t.init.empty() && !resume_) init_from_file(model_, t);
  const auto frozen = freeze_parameters(model_, t);
  if (!frozen.empty())
    spdlog::info("train.freeze {}: {} of {} parameter tensors frozen", t.freeze, frozen.size(),
                 model_->named_parameters().size());
  if (t.layer_decay != 1.0 || t.head_lr_scale != 1.0)
    spdlog::info(
        "train.layer_decay {}, train.head_lr_scale {}: learning rates from {:.4g} x lr "
        "(embeddings) to {:.4g} x lr (head)",
        t.layer_decay, t.head_lr_scale, lr_scale("pos_embed", config_.model.depth, t),
        lr_scale("head.weight", config_.model.depth, t));
}

bool Trainer::validation_due(int64_t step) const {
  const int64_t every =
      config_.train.validate_every > 0 ? config_.train.validate_every : steps_per_epoch_;
  return step % every == 0 || step == config_.train.epochs * steps_per_epoch_;
}

bool Trainer::read_due(int64_t step) const {
  // validation_due() includes the last step.
  return step % read_every_ == 0 || validation_due(step) || (!group_ && stop_requested());
}

bool Trainer::read_step_totals() {
  StepTotals::Values v = training_step_->read_totals();  // waits for the device
  totals_.train_seconds += seconds_since(last_read_);
  last_read_ = Clock::now();
  int64_t images = unread_images_;
  unread_images_ = 0;
  bool stop = stop_requested();
  if (group_) {
    // The global loss and accuracy for the log, and the stop flag, so that a
    // signal to any rank stops all at the same step. A rank's non-finite loss
    // makes the sum non-finite, so every rank stops together.
    auto sums = torch::tensor({v.loss_sum, double(v.correct), double(images), stop ? 1.0 : 0.0},
                              torch::kDouble)
                    .to(group_->device());
    group_->all_reduce_sum(sums, "the step statistics' all-reduce");
    sums = sums.cpu();
    const auto* t = sums.data_ptr<double>();
    v.loss_sum = t[0] / group_->world_size();
    v.correct = static_cast<int64_t>(t[1]);
    images = static_cast<int64_t>(t[2]);
    stop = t[3] > 0;
    if (v.first_non_finite == 0 && !std::isfinite(v.loss_sum)) {
      v.first_non_finite = v.steps;  // another rank's; this one knows only the interval
      v.non_finite_what = "training loss";
      v.non_finite_value = v.loss_sum;
    }
  }
  if (v.first_non_finite > 0)
    stop_on_non_finite(v.non_finite_what, v.non_finite_value, step_ - v.steps + v.first_non_finite);
  totals_.loss_sum += v.loss_sum;
  totals_.correct += v.correct;
  totals_.seen += images;
  totals_.steps += v.steps;
  return stop;
}

std::unique_ptr<data::BatchSource> Trainer::eval_loader(data::SplitName which) const {
  return data::loader_for(splits_, which, config_, data::loader_options(config_, device_, false),
                          group_ ? group_->rank() : 0, group_ ? group_->world_size() : 1);
}

EvalResult Trainer::evaluate_split(VisionTransformer& model, const data::BatchSource& loader,
                                   Precision precision) {
  EvalResult local = evaluate(model, loader, config_.model.num_classes, precision);
  return group_ ? combine_across_ranks(std::move(local), *group_) : local;
}

void Trainer::stop_on_non_finite(const std::string& what, double value, int64_t step) const {
  const auto last = fs::path(run_dir_) / "last.pt";
  throw Error(fmt::format("{} is {} at step {} (epoch {}); stopping. {}", what,
                          non_finite_text(value), step, (step - 1) / steps_per_epoch_ + 1,
                          fs::exists(last) ? "The last good checkpoint is " + last.string()
                                           : std::string("No checkpoint was written before it")));
}

std::string TrainSummary::stop_text() const {
  const std::string text = enum_name(stop_reason);
  return stop_reason == StopReason::kAlreadyFinished ? text + " (" + stopped_before + ")" : text;
}

CheckpointMeta Trainer::meta(bool finished, std::optional<StopReason> stop) const {
  CheckpointMeta m;
  m.config = config_;
  m.class_names = splits_.classes();
  m.step = step_;
  m.epoch = step_ / steps_per_epoch_;
  m.best_metric = early_stopping_.best();
  m.best_step = early_stopping_.best_step();
  m.validations_since_best = early_stopping_.since_best();
  m.finished = finished;
  m.stop_reason = stop ? enum_name(*stop) : "";
  store_running_totals(m, totals_);
  m.elapsed_s = elapsed_before_ + seconds_since(session_start_);
  return m;
}

void Trainer::save(const std::string& name, bool finished, std::optional<StopReason> stop,
                   bool average_as_weights) {
  if (!is_main()) return;  // the ranks hold the same weights and optimizer state
  VisionTransformer& weights = average_as_weights ? ema_->model() : model_;
  save_training_checkpoint(run_dir_ + "/" + name, weights, training_step_->optimizer(),
                           meta(finished, stop), ema_.get());
}

// What a run writes as it goes: metrics.jsonl/csv and TensorBoard's events
// (rank 0 only), and the progress bar or lines.
struct Trainer::RunLogs {
  std::optional<MetricsLog> metrics;
  std::optional<TensorBoardLog> tensorboard;
  Progress progress;
};

std::optional<StopReason> Trainer::resume_from(const std::string& checkpoint,
                                               TrainSummary& summary) {
  const CheckpointMeta m =
      restore_training_checkpoint(checkpoint, model_, training_step_->optimizer(), ema_.get());
  step_ = m.step;
  summary.resumed_at_step = step_;
  early_stopping_.restore(m.best_metric, m.best_step, m.validations_since_best,
                          /*has_best=*/m.best_step > 0);
  spdlog::info("resumed from {} at step {} (epoch {}), best val acc {:.4f}", checkpoint, step_,
               step_ / steps_per_epoch_ + 1, m.best_metric);
  totals_ = stored_running_totals(m, checkpoint);
  elapsed_before_ = m.elapsed_s > 0 ? m.elapsed_s : recorded_elapsed(run_dir_, step_);
  if (!m.finished) return std::nullopt;
  summary.stopped_before = m.stop_reason;
  return StopReason::kAlreadyFinished;
}

Trainer::RunLogs Trainer::open_logs(TrainSummary& summary) const {
  RunLogs logs{std::nullopt, std::nullopt,
               Progress(is_main() && Progress::stderr_is_terminal(), config_.train.log_every_s)};
  if (!is_main()) return logs;
  logs.metrics.emplace(run_dir_, resume_ ? step_ : -1);
  if (config_.train.tensorboard) {
    logs.tensorboard.emplace(run_dir_, step_, config_.train.log_every_s);
    summary.events_file = logs.tensorboard->path();
  }
  return logs;
}

double Trainer::run_step(int64_t epoch, int64_t in_epoch) {
  const double lr = learning_rate(config_.train, step_, steps_per_epoch_);
  const int64_t accum = config_.train.accum_steps, first = in_epoch * accum;
  const int64_t count = std::min(accum, train_loader_->batches_per_epoch() - first);
  int64_t images = 0;
  for (int64_t m = 0; m < count; ++m)
    images += train_loader_->batch_rows(first + m);
  const auto micro_batch = [&](int64_t m) {
    data::Batch batch = train_loader_->batch(epoch, first + m);
    unread_images_ += batch.labels.size(0);
    return batch;
  };
  training_step_->run(micro_batch, count, lr, step_, images);
  ++step_;
  if (ema_) ema_->update(step_);
  return lr;
}

void Trainer::save_snapshot_if_due() {
  const auto snapshot = snapshot_due(step_, steps_per_epoch_, config_.train.snapshot_every);
  if (!snapshot) return;
  if (is_main()) fs::create_directories(fs::path(run_dir_) / "snapshots");
  save(*snapshot, /*finished=*/false);
}

double Trainer::images_per_second() const {
  return totals_.seen / std::max(totals_.train_seconds, 1e-9);
}

void Trainer::log_pipeline_bytes(int64_t epoch) const {
  const auto bytes = train_loader_->pipeline_bytes();
  if (!bytes) return;
  constexpr int64_t kMiB = 1 << 20;
  std::string text =
      fmt::format("epoch {}: the data pipeline holds up to {} MiB of decoded batches", epoch + 1,
                  bytes->batches / kMiB);
  if (bytes->shuffle_buffer_cap > 0)
    text += fmt::format(" and {} MiB of shuffle buffer (at most {} MiB; data.shuffle_buffer_mb {})",
                        bytes->shuffle_buffer / kMiB, bytes->shuffle_buffer_peak / kMiB,
                        bytes->shuffle_buffer_cap / kMiB);
  spdlog::info("{}", text);
}

void Trainer::report_progress(RunLogs& logs, int64_t in_epoch, double lr) const {
  const double loss = totals_.loss_sum / totals_.steps, images_per_sec = images_per_second();
  logs.progress.update(in_epoch + 1, loss, images_per_sec, lr);
  if (logs.tensorboard) logs.tensorboard->progress(step_, loss, lr, images_per_sec);
}

std::optional<StopReason> Trainer::validate_and_checkpoint(RunLogs& logs, double lr,
                                                           int64_t total_steps) {
  logs.progress.clear();
  ValidationRecord r;
  if (const auto peak = peak_memory_bytes(device_)) {
    r.peak_memory_mib = double(*peak) / (1 << 20);
    peak_memory_mib_ = std::max(peak_memory_mib_, *r.peak_memory_mib);
  }
  const EvalResult val = evaluate_split(model_, *val_loader_, precision().precision);
  // Weights that went bad without a non-finite training loss (for example,
  // with gradient clipping off) must not reach a checkpoint.
  if (!std::isfinite(val.loss)) stop_on_non_finite("validation loss", val.loss, step_);
  std::optional<EvalResult> average;
  if (ema_) average = evaluate_split(ema_->model(), *val_loader_, precision().precision);
  // train.ema.select_best: the better of the two weights competes for best.pt.
  const bool average_wins =
      average && ema_->config().select_best && average->accuracy > val.accuracy;
  const bool improved =
      early_stopping_.update(average_wins ? average->accuracy : val.accuracy, step_);
  if (improved) best_is_average_ = average_wins;
  r.step = step_;
  r.epoch = double(step_) / double(steps_per_epoch_);
  r.train_loss = totals_.loss_sum / totals_.steps;
  r.train_acc = double(totals_.correct) / double(totals_.seen);
  r.val_loss = val.loss;
  r.val_acc = val.accuracy;
  if (val.has_top5()) r.val_top5 = val.top5_accuracy();
  if (average) {
    r.ema_val_loss = average->loss;
    r.ema_val_acc = average->accuracy;
  }
  r.best_val_acc = early_stopping_.best();
  r.lr = lr;
  r.images_per_sec = images_per_second();
  r.elapsed_s = elapsed_before_ + seconds_since(session_start_);
  if (logs.metrics) logs.metrics->append(r);
  if (logs.tensorboard) logs.tensorboard->record(r);
  totals_ = {};  // the checkpoints below start a new interval
  spdlog::info(
      "step {} epoch {:.2f}: train loss {:.4f} acc {:.4f} | val loss {:.4f} acc {:.4f}{}{}{} | "
      "lr {:.2e} | {:.0f} img/s | {:.0f} s{}",
      r.step, r.epoch, r.train_loss, r.train_acc, r.val_loss, r.val_acc,
      r.val_top5 ? fmt::format(" top-5 {:.4f}", *r.val_top5) : "",
      average ? fmt::format(" | ema acc {:.4f}", average->accuracy) : "",
      improved ? std::string(average_wins ? " (best, ema)" : " (best)")
               : fmt::format(" (best {:.4f} at step {})", early_stopping_.best(),
                             early_stopping_.best_step()),
      r.lr, r.images_per_sec, r.elapsed_s,
      r.peak_memory_mib ? fmt::format(" | peak {:.0f} MiB", *r.peak_memory_mib) : "");
  std::optional<StopReason> stopped;
  if (early_stopping_.should_stop()) stopped = StopReason::kPatienceExhausted;
  const bool finished = stopped.has_value() || step_ == total_steps;
  // best.pt says why only when training stopped early (as it always has).
  if (improved) save("best.pt", finished, stopped, average_wins);
  save("last.pt", finished, finished ? stopped.value_or(StopReason::kEpochsDone) : stopped);
  reset_peak_memory(device_);  // the next interval's steps, without the evaluation
  return stopped;
}

TrainSummary Trainer::finish(TrainSummary summary, std::optional<StopReason> stopped) {
  summary.stop_reason = stopped.value_or(StopReason::kEpochsDone);
  summary.steps = step_;
  summary.epochs = double(step_) / double(steps_per_epoch_);
  summary.best_val_acc = early_stopping_.best();
  summary.best_step = early_stopping_.best_step();
  summary.train_seconds = seconds_since(session_start_);
  if (summary.stop_reason != StopReason::kInterrupted) summary.test = test_best();
  if (is_main()) write_summary(summary);
  return summary;
}

TrainSummary Trainer::fit() {
  if (is_main()) fs::create_directories(run_dir_);
  TrainSummary summary;
  std::optional<StopReason> stopped;  // set when a reason to stop arrives
  if (resume_) stopped = resume_from(*resume_, summary);
  if (group_) check_ranks_agree();
  RunLogs logs = open_logs(summary);
  session_start_ = Clock::now();
  training_step_->use_cuda_graph_if_wanted(config_.train.cuda_graph);
  reset_peak_memory(device_);  // the steps' peak, not the setup's
  last_read_ = Clock::now();
  const int64_t first_step = step_, total_steps = config_.train.epochs * steps_per_epoch_;
  while (!stopped && step_ < total_steps) {
    const int64_t epoch = step_ / steps_per_epoch_, in_epoch = step_ % steps_per_epoch_;
    if (in_epoch == 0 || step_ == first_step)
      logs.progress.start_epoch(epoch, config_.train.epochs, steps_per_epoch_, in_epoch);
    const double lr = run_step(epoch, in_epoch);
    if (step_ % steps_per_epoch_ == 0 && is_main()) log_pipeline_bytes(epoch);
    save_snapshot_if_due();
    if (!read_due(step_)) continue;
    const bool stop_asked = read_step_totals();  // SIGINT or SIGTERM on any rank
    report_progress(logs, in_epoch, lr);
    if (validation_due(step_)) stopped = validate_and_checkpoint(logs, lr, total_steps);
    last_read_ = Clock::now();  // validation and checkpoints are not training time
    if (!stopped && stop_asked) {
      logs.progress.clear();
      stopped = StopReason::kInterrupted;
      save("last.pt", /*finished=*/false);
    }
  }
  logs.progress.clear();
  return finish(std::move(summary), stopped);
}

std::optional<EvalResult> Trainer::test_best() {
  if (splits_.test_size() == 0) return std::nullopt;
  const auto best = run_dir_ + "/best.pt";
  // Rank 0 wrote best.pt; it says whether there is one, and sends its weights.
  auto have_best = torch::tensor({is_main() && fs::exists(best) ? 1 : 0}, torch::kInt64);
  if (group_) {
    have_best = have_best.to(group_->device());
    group_->broadcast_from_main(have_best, "the test's start");
  }
  if (have_best.item<int64_t>() == 0) return std::nullopt;
  const auto test_loader = eval_loader(data::SplitName::kTest);
  // In the training precision, as validation ran and as `vit eval` and `vit
  // predict` run best.pt by default, so all three agree image by image.
  // When the last step was the best, the trainer's own weights are best.pt's
  // (one process: nothing to broadcast), and reading the file back is skipped.
  // (measured: docs/benchmarks.md, "Why the own kernels")
  if (!group_ && early_stopping_.best_step() == step_ && !best_is_average_)
    return evaluate_split(model_, *test_loader, test_precision());
  // best.pt's weights go into a separate model, so the trainer's own state
  // (the last step's weights) stays as it is.
  VisionTransformer model = is_main() ? load_model(best).model : VisionTransformer(config_.model);
  model->to(device_);
  if (group_) broadcast_model(model, *group_);
  return evaluate_split(model, *test_loader, test_precision());
}

Precision Trainer::test_precision() const {
  return evaluation_precision(precision().precision, device_);
}

void Trainer::write_summary(const TrainSummary& s) const {
  nlohmann::json j = {{"stop_reason", s.stop_text()},
                      {"steps", s.steps},
                      {"epochs", s.epochs},
                      {"best_val_acc", s.best_val_acc},
                      {"best_step", s.best_step},
                      {"train_seconds", s.train_seconds},
                      {"precision", enum_name(precision().precision)},
                      {"cpu_isa", cpu_isa_name(cpu_isa())},
                      {"validation", enum_name(splits_.validation)},
                      {"val_images", splits_.val_size()}};
  if (device_.is_cuda() && peak_memory_mib_ > 0) j["peak_gpu_memory_mib"] = peak_memory_mib_;
  if (peak_memory_mib_ > 0) j["peak_memory_mib"] = peak_memory_mib_;
  if (ema_) j["best_weights"] = best_is_average_ ? "ema" : "weights";
  if (s.test) {
    j["test_acc"] = s.test->accuracy;
    j["test_loss"] = s.test->loss;
    j["test_images"] = s.test->count;
    j["test_precision"] = enum_name(test_precision());
  } else if (splits_.test_size() == 0) {
    j["test_images"] = 0;  // no test split: e.g. val/ validates (data.validation folder)
  }
  write_text_atomically(run_dir_ + "/summary.json", j.dump(2) + "\n");
}

}  // namespace vit
