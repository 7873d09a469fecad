#include "commands/memory_report.hpp"

#include <fmt/format.h>

#include "cli/number_text.hpp"

namespace vit::cli {
namespace {

// Every part's key, so the JSON has the same fields for every config.
constexpr const char* kPartKeys[] = {
    "runtime",     "weights",   "gradients", "optimizer", "low_precision_weights", "ema", "images",
    "activations", "recompute", "backward",  "heap"};

double mib(int64_t bytes) {
  return double(bytes) / double(1 << 20);
}

std::string mib_text(int64_t bytes) {
  return with_commas((bytes + (1 << 19)) >> 20) + " MiB";
}

std::string checkpointing_text(int64_t every) {
  if (every == 0) return "off";
  return every == 1 ? "every block" : fmt::format("every {} blocks", every);
}

int64_t total_at(Config config, int64_t batch, const MemoryTarget& target, int64_t every) {
  config.train.grad_checkpointing.every = every;
  return estimate_step_memory(config, batch, target).total_bytes();
}

}  // namespace

MemoryReport memory_report(const Config& config, int64_t batch, const MemoryTarget& target) {
  MemoryReport r;
  r.estimate = estimate_step_memory(config, batch, target);
  const int64_t every = config.train.grad_checkpointing.every;
  r.with_checkpointing_every = every > 0 ? every : 1;
  r.without_checkpointing_bytes = total_at(config, batch, target, 0);
  r.with_checkpointing_bytes = total_at(config, batch, target, r.with_checkpointing_every);
  return r;
}

nlohmann::json memory_json(const MemoryReport& r) {
  const MemoryEstimate& e = r.estimate;
  nlohmann::json j = {{"batch", e.batch},
                      {"micro_batch", e.micro_batch},
                      {"accum_steps", e.batch / e.micro_batch},
                      {"precision", enum_name(e.precision)},
                      {"grad_checkpointing", e.checkpoint_every}};
  for (const char* key : kPartKeys)
    j[std::string(key) + "_mib"] = mib(e.bytes_of(key));
  j["total_mib"] = mib(e.total_bytes());
  j["total_without_checkpointing_mib"] = mib(r.without_checkpointing_bytes);
  j["total_with_checkpointing_mib"] = mib(r.with_checkpointing_bytes);
  j["with_checkpointing_every"] = r.with_checkpointing_every;
  return j;
}

std::string memory_text(const MemoryReport& r) {
  const MemoryEstimate& e = r.estimate;
  std::string out = fmt::format(
      "  memory     one training step, estimated: batch {} ({} x {} images), {}, checkpointing "
      "{}\n",
      e.batch, e.batch / e.micro_batch, e.micro_batch, enum_name(e.precision),
      checkpointing_text(e.checkpoint_every));
  const auto line = [&](const std::string& label, int64_t bytes) {
    out += fmt::format("             {:<40} {:>11}\n", label, mib_text(bytes));
  };
  for (const auto& part : e.parts)
    line(part.label, part.bytes);
  line("total", e.total_bytes());
  if (e.checkpoint_every == 0)
    line("total with checkpointing (" + checkpointing_text(r.with_checkpointing_every) + ")",
         r.with_checkpointing_bytes);
  else
    line("total without checkpointing", r.without_checkpointing_bytes);
  return out;
}

}  // namespace vit::cli
