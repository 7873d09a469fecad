#include "vit/train/tensorboard_log.hpp"

#include <nlohmann/json.hpp>

namespace vit {

TensorBoardLog::TensorBoardLog(const std::string& run_dir, int64_t first_step, double log_every_s)
    : events_(io::EventsWriter::create(run_dir, first_step)),
      every_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(log_every_s))) {}

void TensorBoardLog::record(const ValidationRecord& record) {
  const nlohmann::json fields = to_json(record);  // items() refers to it: not a temporary
  for (const auto& [name, value] : fields.items())
    if (value.is_number()) events_.scalar(name, value.get<double>(), record.step);
}

void TensorBoardLog::progress(int64_t step, double train_loss, double lr, double images_per_sec) {
  const auto now = std::chrono::steady_clock::now();
  if (progress_written_ && now - last_progress_ < every_) return;
  events_.scalar("progress/train_loss", train_loss, step);
  events_.scalar("progress/lr", lr, step);
  events_.scalar("progress/images_per_sec", images_per_sec, step);
  last_progress_ = now;
  progress_written_ = true;
}

}  // namespace vit
