#pragma once
// The training loop: AdamW/SGD with warmup + cosine, label smoothing, gradient
// clipping, mixed precision, validation every epoch or every N steps, early
// stopping, best.pt/last.pt checkpoints, metrics.jsonl/csv, clean stops on
// SIGINT/SIGTERM, exact resume, and a final test of best.pt.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "vit/config.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/infer/evaluate.hpp"
#include "vit/infer/precision.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/train/early_stopping.hpp"
#include "vit/train/loss_scaler.hpp"
#include "vit/train/running_totals.hpp"
#include "vit/train/step_profiler.hpp"
#include "vit/train/step_totals.hpp"

namespace vit {

// Why training stopped.
enum class StopReason { kEpochsDone, kPatienceExhausted, kInterrupted, kAlreadyFinished };
template <>
struct EnumNames<StopReason> {
  static constexpr std::pair<StopReason, const char*> table[] = {
      {StopReason::kEpochsDone, "epochs done"},
      {StopReason::kPatienceExhausted, "patience exhausted"},
      {StopReason::kInterrupted, "interrupted"},
      {StopReason::kAlreadyFinished, "already finished"}};
};

struct TrainSummary {
  StopReason stop_reason = StopReason::kEpochsDone;
  std::string stopped_before;  // kAlreadyFinished: why the resumed run had stopped
  // "epochs done", or "already finished (epochs done)": for logs and summary.json
  std::string stop_text() const;
  int64_t steps = 0;
  double epochs = 0;  // fractional epochs trained
  double best_val_acc = 0;
  int64_t best_step = 0;
  std::optional<EvalResult>
      test;                  // best.pt on the test split; absent when interrupted or no test split
  double train_seconds = 0;  // wall time of this invocation's training loop
  std::string events_file;   // this invocation's TensorBoard events; empty when off
};

class ProcessGroup;
class CudaGraphStep;
class Optimizer;
class WeightMirror;
struct CheckpointMeta;
namespace data {
class BatchSource;
struct Batch;
}  // namespace data

class Trainer {
 public:
  // splits: train (after the hold-out and limits), val (early stopping and
  // model selection) and test (used once, at the end; may be empty).
  // run_dir receives best.pt, last.pt, metrics.jsonl, metrics.csv and summary.json.
  // resume: a last.pt (or best.pt) to continue from.
  // group: the data-parallel world (train/distributed.hpp), or null to train
  // alone. With one, every rank trains on its slice of each global batch,
  // evaluates its share of val and test, and only rank 0 writes files.
  Trainer(Config config, data::DataSplits splits, c10::Device device, std::string run_dir,
          std::optional<std::string> resume = {}, ProcessGroup* group = nullptr);
  ~Trainer();

  TrainSummary fit();
  // Profile some steps of fit() (train/step_profiler.hpp).
  void profile(StepProfiler profiler) { profiler_ = std::move(profiler); }

  VisionTransformer& model() { return model_; }
  // The precision the steps run, train.precision's "auto" resolved.
  const PrecisionChoice& precision() const { return precision_; }
  // Training steps replayed from a CUDA graph so far (0 when none was captured).
  int64_t cuda_graph_replays() const;

 private:
  struct RunLogs;  // metrics.jsonl/csv, TensorBoard, the progress bar (trainer.cpp)

  // fit's steps, in order.
  // Restores the model, the optimizer and the run's records from `checkpoint`;
  // kAlreadyFinished when that run had ended (why goes to `summary`).
  std::optional<StopReason> resume_from(const std::string& checkpoint, TrainSummary& summary);
  RunLogs open_logs(TrainSummary& summary) const;
  // One training step at (epoch, step in epoch); returns its learning rate.
  double run_step(int64_t epoch, int64_t in_epoch);
  void save_snapshot_if_due();
  void report_progress(RunLogs& logs, int64_t in_epoch, double lr) const;
  // Validates, logs the record, saves best.pt and last.pt; a reason to stop
  // when early stopping says so.
  std::optional<StopReason> validate_and_checkpoint(RunLogs& logs, double lr, int64_t total_steps);
  // The summary's numbers, the final test of best.pt, summary.json.
  TrainSummary finish(TrainSummary summary, std::optional<StopReason> stopped);

  double images_per_second() const;  // since the last validation
  bool is_main() const;
  // Waits for the steps queued since the last read, adds their statistics
  // (summed over the ranks) to totals_, and stops the run with an error if a
  // loss or gradient norm was not finite. Returns whether any rank was asked
  // to stop (SIGINT/SIGTERM).
  bool read_step_totals();
  bool read_due(int64_t step) const;
  // val or test on this rank's share, combined over the ranks.
  EvalResult evaluate_split(VisionTransformer& model, const data::BatchSource& loader,
                            Precision precision);
  // The val or test split's loader: this rank's share under torchrun.
  std::unique_ptr<data::BatchSource> eval_loader(data::SplitName which) const;
  void check_ranks_agree();
  void prepare_for_fine_tuning();  // train.init, train.freeze
  // One step, queued without waiting for the device: forward, backward,
  // optimizer; its statistics go to step_totals_. The learning rate is the
  // optimizer's, set before.
  void train_step(const data::Batch& batch);
  void start_cuda_graph_if_wanted();
  bool validation_due(int64_t step) const;
  // Throws vit::Error naming the value, the step and the last good checkpoint.
  [[noreturn]] void stop_on_non_finite(const std::string& what, double value, int64_t step) const;
  // `stop`: why training ended, when `finished`
  CheckpointMeta meta(bool finished, std::optional<StopReason> stop) const;
  void save(const std::string& name, bool finished, std::optional<StopReason> stop = std::nullopt);
  std::optional<EvalResult> test_best();
  // The final test's precision: the training one where the device runs it.
  Precision test_precision() const;
  void write_summary(const TrainSummary& summary) const;

  Config config_;
  data::DataSplits splits_;
  c10::Device device_;
  PrecisionChoice precision_;  // train.precision on device_ ("auto" resolved)
  std::string run_dir_;
  std::optional<std::string> resume_;
  ProcessGroup* group_ = nullptr;
  VisionTransformer model_{nullptr};
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<WeightMirror> weight_mirror_;  // bf16/fp16 training only
  bool bf16_end_to_end_ = false;                 // no autocast: the mirror holds every parameter
  std::unique_ptr<data::BatchSource> train_loader_, val_loader_;
  EarlyStopping early_stopping_;
  LossScaler scaler_;
  StepProfiler profiler_;
  int64_t step_ = 0;
  int64_t steps_per_epoch_ = 0;
  StepTotals step_totals_;     // on the device, since the last read
  int64_t read_every_ = 1;     // steps between reads of step_totals_
  int64_t unread_images_ = 0;  // this rank's training images since the last read
  std::chrono::steady_clock::time_point last_read_;  // training time runs from here
  RunningTotals totals_;       // since the last validation; saved in checkpoints
  double elapsed_before_ = 0;  // run time of earlier sessions (resume)
  std::chrono::steady_clock::time_point session_start_ = std::chrono::steady_clock::now();
  // train.cuda_graph on a CUDA device. Last, so that it is destroyed first:
  // the captured graph holds the addresses of the model's, the optimizer's,
  // the loss scaler's and the step totals' buffers, and must not outlive them.
  std::unique_ptr<CudaGraphStep> graph_step_;
};

}  // namespace vit
