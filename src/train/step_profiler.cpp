#include "vit/train/step_profiler.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "vit/atomic_write.hpp"
#include "vit/error.hpp"

namespace vit {

namespace profiler = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

namespace {

// One operator call on one thread, in microseconds.
struct Call {
  std::string name;
  double start_us, duration_us;
  uint64_t thread;
};

// On a machine with a GPU, the kernels too: their device time per step, named
// "[gpu] KERNEL", beside the host's operator calls that launched them.
std::set<impl::ActivityType> activities() {
  if (torch::cuda::is_available()) return {impl::ActivityType::CPU, impl::ActivityType::CUDA};
  return {impl::ActivityType::CPU};
}

// The GPU's work sits on "threads" of its own, one per stream, apart from
// the host's (a kernel's time is all its own: none nest on a stream).
constexpr uint64_t kGpuThreadBase = uint64_t{1} << 62;

impl::ProfilerConfig config() {
  return impl::ProfilerConfig(impl::ProfilerState::KINETO);
}

Call call_of(const profiler::KinetoEvent& e) {
#if TORCH_VERSION_MAJOR >= 2
  return {e.name(), e.startNs() / 1e3, e.durationNs() / 1e3, e.startThreadId()};
#else
  return {e.name(), double(e.startUs()), double(e.durationUs()), e.startThreadId()};
#endif
}

struct OpTotals {
  int64_t calls = 0;
  double total_us = 0, self_us = 0;
};

// Self time: a call's duration less that of the calls nested directly in it
// on the same thread (aten::linear less its aten::matmul, say).
std::map<std::string, OpTotals> totals_by_name(std::vector<Call> calls) {
  std::sort(calls.begin(), calls.end(), [](const Call& a, const Call& b) {
    return a.thread != b.thread       ? a.thread < b.thread
           : a.start_us != b.start_us ? a.start_us < b.start_us
                                      : a.duration_us > b.duration_us;
  });
  std::map<std::string, OpTotals> totals;
  std::vector<const Call*> open;  // the enclosing calls of the current one
  std::vector<double> child_us;   // time of their direct children so far
  const auto close = [&] {
    auto& t = totals[open.back()->name];
    // LibTorch 1.13 times calls in whole microseconds, so the children of a
    // short call can add up to more than it; its self time is then 0.
    t.self_us += std::max(0.0, open.back()->duration_us - child_us.back());
    open.pop_back();
    child_us.pop_back();
  };
  uint64_t thread = ~uint64_t{0};
  for (const auto& c : calls) {
    if (c.thread != thread) {
      while (!open.empty())
        close();
      thread = c.thread;
    }
    while (!open.empty() && c.start_us >= open.back()->start_us + open.back()->duration_us)
      close();
    if (!open.empty()) child_us.back() += c.duration_us;
    auto& t = totals[c.name];
    ++t.calls;
    t.total_us += c.duration_us;
    open.push_back(&c);
    child_us.push_back(0.0);
  }
  while (!open.empty())
    close();
  return totals;
}

// PATH: the operator table per step, by self time; PATH.trace.json: every call.
void write_profile(const std::string& path, const std::vector<Call>& calls, int64_t steps) {
  const auto totals = totals_by_name(calls);
  std::vector<std::pair<std::string, OpTotals>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.self_us > b.second.self_us; });
  nlohmann::json table = nlohmann::json::array();
  for (const auto& [name, t] : rows)
    table.push_back({{"name", name},
                     {"calls_per_step", double(t.calls) / double(steps)},
                     {"total_us_per_step", t.total_us / double(steps)},
                     {"self_us_per_step", t.self_us / double(steps)}});
  write_text_atomically(
      path, nlohmann::json{{"source", "vit"}, {"steps", steps}, {"ops", table}}.dump(1) + "\n");
  nlohmann::json events = nlohmann::json::array();
  for (const auto& c : calls)
    events.push_back({{"name", c.name},
                      {"ph", "X"},
                      {"ts", c.start_us},
                      {"dur", c.duration_us},
                      {"pid", 0},
                      {"tid", c.thread}});
  write_text_atomically(path + ".trace.json",
                        nlohmann::json{{"traceEvents", events}}.dump() + "\n");
}

}  // namespace

StepProfiler::StepProfiler(std::string path, int64_t first, int64_t count)
    : path_(std::move(path)), first_(first), count_(count) {
  if (count < 1 || first < 0)
    throw Error("--profile-steps " + std::to_string(count) + " after step " +
                std::to_string(first) + ": expected at least 1 step");
}

StepProfiler::~StepProfiler() {
  if (recording_) profiler::disableProfiler();
}

void StepProfiler::before_step(int64_t step) {
  if (!active() || step != first_) return;
  const auto recorded = activities();
  profiler::prepareProfiler(config(), recorded);
  profiler::enableProfiler(config(), recorded);
  recording_ = true;
}

void StepProfiler::after_step(int64_t step) {
  if (!recording_ || step != first_ + count_ - 1) return;
  const auto result = profiler::disableProfiler();
  recording_ = false;
  std::vector<Call> calls;
  int64_t kernels = 0;
  for (const auto& e : result->events()) {
    if (e.deviceType() == c10::DeviceType::CPU) {
      calls.push_back(call_of(e));
    } else if (e.deviceType() == c10::DeviceType::CUDA) {
      Call kernel = call_of(e);
      kernel.name = "[gpu] " + kernel.name;
      kernel.thread = kGpuThreadBase + e.deviceResourceId();
      calls.push_back(kernel);
      ++kernels;
    }
  }
  write_profile(path_, calls, count_);
  spdlog::info(
      "profile of steps {}..{}: {} (operator table), {}.trace.json: {} host calls, {} "
      "GPU kernels ({} events)",
      first_ + 1, first_ + count_, path_, path_, calls.size() - kernels, kernels,
      result->events().size());
  if (calls.empty())
    spdlog::warn("the profiler recorded no operator in steps {}..{}", first_ + 1, first_ + count_);
}

}  // namespace vit
