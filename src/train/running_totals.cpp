#include "vit/train/running_totals.hpp"

#include "vit/error.hpp"

namespace vit {
namespace {

constexpr const char* kKey = "since_validation";

}  // namespace

void store_running_totals(CheckpointMeta& meta, const RunningTotals& totals) {
  meta.trainer[kKey] = {{"loss_sum", totals.loss_sum},
                        {"correct", totals.correct},
                        {"seen", totals.seen},
                        {"steps", totals.steps},
                        {"train_seconds", totals.train_seconds}};
}

RunningTotals stored_running_totals(const CheckpointMeta& meta, const std::string& source) {
  if (!meta.trainer.contains(kKey)) return {};
  try {
    const nlohmann::json& t = meta.trainer.at(kKey);
    return {t.at("loss_sum").get<double>(), t.at("correct").get<int64_t>(),
            t.at("seen").get<int64_t>(), t.at("steps").get<int64_t>(),
            t.at("train_seconds").get<double>()};
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": damaged checkpoint metadata (" + std::string(e.what()) + ")");
  }
}

}  // namespace vit
