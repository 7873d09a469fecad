#pragma once
// LibTorch's own profiler over a few training steps: `vit train --profile
// FILE` records steps [first, first + count) of the run (after warm-up) and
// writes FILE, a JSON table of every operator's calls, total and self time
// per step, and FILE's Chrome trace beside it (FILE.trace.json, for
// chrome://tracing or ui.perfetto.dev). On a machine with a GPU the table
// also holds each kernel's device time per step, as "[gpu] KERNEL" (the
// training step runs eagerly while profiled: no CUDA graph). Debian's
// LibTorch 1.13 is built without Kineto, so the trace is assembled here from
// the profiler's events rather than by LibTorch's own save().
#include <cstdint>
#include <memory>
#include <string>

namespace vit {

class StepProfiler {
 public:
  StepProfiler() = default;  // off
  // Throws vit::Error if count < 1 or first < 0.
  StepProfiler(std::string path, int64_t first, int64_t count);
  ~StepProfiler();

  bool active() const { return !path_.empty(); }
  void before_step(int64_t step);  // step: 0-based, of the whole run
  void after_step(int64_t step);   // writes the files after the last profiled step

 private:
  std::string path_;
  int64_t first_ = 0, count_ = 0;
  bool recording_ = false;
};

}  // namespace vit
