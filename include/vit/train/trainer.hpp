#pragma once
// The training loop (docs/training.md): warmup + cosine, mixed precision, validation,
// early stopping, best.pt/last.pt, metrics, clean stops on SIGINT/SIGTERM, exact
// resume, and a final test of best.pt.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "vit/config.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/train/early_stopping.hpp"
#include "vit/train/running_totals.hpp"
#include "vit/train/train_summary.hpp"

namespace vit {

class ModelEma;
class ProcessGroup;
class StepProfiler;
class TrainingStep;
struct CheckpointMeta;
struct PrecisionChoice;
namespace data {
class BatchSource;
struct Batch;
}  // namespace data

class Trainer {
 public:
  // splits: val for early stopping and model selection, test used once at the end
  // (may be empty). run_dir receives best.pt, last.pt, metrics.jsonl/csv and
  // summary.json. resume: a last.pt (or best.pt) to continue from. group: the
  // data-parallel world, or null to train alone; only rank 0 writes files.
  Trainer(Config config, data::DataSplits splits, c10::Device device, std::string run_dir,
          std::optional<std::string> resume = {}, ProcessGroup* group = nullptr);
  ~Trainer();

  TrainSummary fit();
  // Profile some steps of fit() (train/step_profiler.hpp).
  void profile(StepProfiler profiler);

  VisionTransformer& model() { return model_; }
  const PrecisionChoice& precision() const;  // train.precision, "auto" resolved
  int64_t cuda_graph_replays() const;        // training steps replayed from a CUDA graph

 private:
  struct RunLogs;  // metrics.jsonl/csv, TensorBoard, the progress bar (trainer.cpp)

  // fit's steps, in order. resume_from: kAlreadyFinished when that run had ended.
  std::optional<StopReason> resume_from(const std::string& checkpoint, TrainSummary& summary);
  RunLogs open_logs(TrainSummary& summary) const;
  double run_step(int64_t epoch, int64_t in_epoch);  // returns its learning rate
  void save_snapshot_if_due();
  void log_pipeline_bytes(int64_t epoch) const;
  void report_progress(RunLogs& logs, int64_t in_epoch, double lr) const;
  // Also saves best.pt and last.pt; a reason to stop when early stopping says so.
  std::optional<StopReason> validate_and_checkpoint(RunLogs& logs, double lr, int64_t total_steps);
  TrainSummary finish(TrainSummary summary, std::optional<StopReason> stopped);

  double images_per_second() const;  // since the last validation
  bool is_main() const;
  // Adds the queued steps' statistics (summed over the ranks) to totals_; throws on a
  // non-finite loss or gradient norm. Returns whether any rank was asked to stop.
  bool read_step_totals();
  bool read_due(int64_t step) const;
  // This rank's share of val or test, combined over the ranks.
  EvalResult evaluate_split(VisionTransformer& model, const data::BatchSource& loader,
                            Precision precision);
  std::unique_ptr<data::BatchSource> eval_loader(data::SplitName which) const;
  void check_ranks_agree();
  void prepare_for_fine_tuning();  // train.init, train.freeze
  bool validation_due(int64_t step) const;
  // Throws vit::Error naming the value, the step and the last good checkpoint.
  [[noreturn]] void stop_on_non_finite(const std::string& what, double value, int64_t step) const;
  // `stop`: why training ended, when `finished`
  CheckpointMeta meta(bool finished, std::optional<StopReason> stop) const;
  // `average_as_weights`: the file's weights are train.ema's average.
  void save(const std::string& name, bool finished, std::optional<StopReason> stop = std::nullopt,
            bool average_as_weights = false);
  std::optional<EvalResult> test_best();
  Precision test_precision() const;  // the training one where the device runs it
  void write_summary(const TrainSummary& summary) const;

  Config config_;
  data::DataSplits splits_;
  c10::Device device_;
  std::string run_dir_;
  std::optional<std::string> resume_;
  ProcessGroup* group_ = nullptr;
  VisionTransformer model_{nullptr};
  std::unique_ptr<data::BatchSource> train_loader_, val_loader_;
  EarlyStopping early_stopping_;
  int64_t step_ = 0;
  int64_t steps_per_epoch_ = 0;
  int64_t read_every_ = 1;     // steps between reads of the step statistics
  int64_t unread_images_ = 0;  // this rank's training images since the last read
  std::chrono::steady_clock::time_point last_read_;  // training time runs from here
  RunningTotals totals_;       // since the last validation; saved in checkpoints
  double elapsed_before_ = 0;  // run time of earlier sessions (resume)
  std::chrono::steady_clock::time_point session_start_ = std::chrono::steady_clock::now();
  // The optimizer, the precision's machinery, the CUDA graph; made once the model's
  // frozen parameters are known.
  std::unique_ptr<TrainingStep> training_step_;
  std::unique_ptr<ModelEma> ema_;  // train.ema; null when off
  bool best_is_average_ = false;   // best.pt holds the average's weights
  double peak_memory_mib_ = 0;     // the steps' highest peak since this process started
};

}  // namespace vit
