#pragma once
// metrics.jsonl and metrics.csv: one record per validation, appended and
// flushed at once so a crash loses nothing that was validated.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vit {

struct ValidationRecord {
  int64_t step = 0;       // optimizer steps done
  double epoch = 0;       // fractional epochs done
  double train_loss = 0;  // mean training loss since the previous record
  double train_acc = 0;   // mean training accuracy since the previous record (hard labels)
  double val_loss = 0;
  double val_acc = 0;  // fraction in [0, 1]
  double best_val_acc = 0;
  double lr = 0;
  double images_per_sec = 0;  // training throughput since the previous record
  double elapsed_s = 0;       // wall time since the run started (resumed runs continue the count)
  // Set where they apply; metrics.jsonl leaves out the unset ones, metrics.csv
  // leaves their cells empty.
  std::optional<double> val_top5;                   // top-5 accuracy, with more than five classes
  std::optional<double> ema_val_loss, ema_val_acc;  // the weights' average (train.ema)
  // The training steps' peak memory since the previous record, MiB: the
  // process's resident set on the CPU, the allocator's peak on CUDA.
  std::optional<double> peak_memory_mib;
};

// The record as metrics.jsonl holds it: one line of this JSON object.
nlohmann::json to_json(const ValidationRecord& record);

class MetricsLog {
 public:
  // Opens (creating if needed) DIR/metrics.jsonl and DIR/metrics.csv. Records
  // with step > keep_up_to_step are dropped first: a resumed run rewrites what
  // came after its checkpoint. keep_up_to_step < 0 starts both files afresh.
  MetricsLog(const std::string& dir, int64_t keep_up_to_step);
  void append(const ValidationRecord& record);

  // Reads every record of a metrics.jsonl (for curves.png).
  static std::vector<ValidationRecord> read(const std::string& jsonl_path);

 private:
  std::string jsonl_path_, csv_path_;
};

}  // namespace vit
