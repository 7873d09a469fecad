#pragma once
// What a training run reports when it ends: why it stopped, how far it got,
// its best validation and its final test (summary.json).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "vit/enum_names.hpp"
#include "vit/infer/evaluate.hpp"

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
  int64_t resumed_at_step = 0;  // the step a resumed run went on from; 0 for a new run
  double epochs = 0;            // fractional epochs trained
  double best_val_acc = 0;
  int64_t best_step = 0;
  std::optional<EvalResult>
      test;                  // best.pt on the test split; absent when interrupted or no test split
  double train_seconds = 0;  // wall time of this invocation's training loop
  std::string events_file;   // this invocation's TensorBoard events; empty when off
};

}  // namespace vit
