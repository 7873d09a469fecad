#pragma once
// vit info's memory estimate of one training step (train/memory_estimate),
// with and without gradient checkpointing, as text and as JSON.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "vit/config.hpp"
#include "vit/train/memory_estimate.hpp"

namespace vit::cli {

struct MemoryReport {
  MemoryEstimate estimate;  // as the config trains
  // The same step without checkpointing and with it (every block, or the
  // config's interval when it has one): what checkpointing would save.
  int64_t without_checkpointing_bytes = 0;
  int64_t with_checkpointing_bytes = 0;
  int64_t with_checkpointing_every = 1;
};

// Throws vit::Error for a batch below 1 or one that train.accum_steps does not divide.
MemoryReport memory_report(const Config& config, int64_t batch, const MemoryTarget& target);

// {"batch", "micro_batch", "accum_steps", "precision", "grad_checkpointing",
// "<part>_mib" for every part (0 where the step has none), "total_mib",
// "total_without_checkpointing_mib", "total_with_checkpointing_mib",
// "with_checkpointing_every"}
nlohmann::json memory_json(const MemoryReport& report);

// Indented lines for vit info's text: one a part, the total, and the other
// checkpointing setting's total.
std::string memory_text(const MemoryReport& report);

}  // namespace vit::cli
