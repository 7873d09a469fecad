#include "vit/train/fine_tune.hpp"

#include <cctype>
#include <cmath>

#include <c10/util/StringUtil.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

namespace vit {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// "blocks.3.attn.qkv.weight" -> 3; -1 for names outside the blocks.
int64_t block_of(const std::string& name) {
  const std::string prefix = "blocks.";
  if (!starts_with(name, prefix)) return -1;
  size_t end = prefix.size();
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])))
    ++end;
  return end == prefix.size() ? -1 : std::stoll(name.substr(prefix.size(), end - prefix.size()));
}

bool is_embedding(const std::string& name) {
  return starts_with(name, "patch_embed.") || name == "cls_token" || name == "reg_token" ||
         name == "dist_token" || name == "pos_embed" || starts_with(name, "norm_pre.");
}

bool is_head(const std::string& name) {
  return starts_with(name, "head.") || starts_with(name, "head_dist.");
}

// Up to `most` names, then "... and K more", for a log line.
std::string some_of(const std::vector<std::string>& items, size_t most = 8) {
  if (items.size() <= most) return c10::Join(", ", items);
  const std::vector<std::string> first(items.begin(), items.begin() + most);
  return c10::Join(", ", first) + " ... and " + std::to_string(items.size() - most) + " more";
}

}  // namespace

int64_t layer_index(const std::string& name, int64_t depth) {
  if (is_embedding(name)) return 0;
  const int64_t block = block_of(name);
  return block >= 0 ? block + 1 : depth + 1;
}

double lr_scale(const std::string& name, int64_t depth, const TrainConfig& train) {
  const double decay =
      std::pow(train.layer_decay, static_cast<double>(depth + 1 - layer_index(name, depth)));
  return is_head(name) ? decay * train.head_lr_scale : decay;
}

bool is_frozen(const std::string& name, int64_t depth, const TrainConfig& train) {
  const FreezePlan plan = freeze_plan(train.freeze);
  switch (plan.kind) {
    case FreezePlan::Kind::kNone:
      return false;
    case FreezePlan::Kind::kBackbone:
      return !is_head(name);
    case FreezePlan::Kind::kBlocks:
      break;
  }
  const int64_t layer = layer_index(name, depth);
  return layer <= plan.blocks && layer <= depth;  // the embeddings (0) and blocks.0..N-1 (1..N)
}

std::vector<std::string> freeze_parameters(VisionTransformer& model, const TrainConfig& train) {
  std::vector<std::string> frozen;
  const int64_t depth = model->config().depth;
  for (auto& p : model->named_parameters()) {
    if (!is_frozen(p.key(), depth, train)) continue;
    p.value().set_requires_grad(false);
    frozen.push_back(p.key());
  }
  return frozen;
}

InitReport init_from_file(VisionTransformer& model, const TrainConfig& train) {
  const InitReport report =
      init_from_pretrained(model, read_pretrained_tensors(train.init), train.init,
                           {train.init_strict, train.init_new_head});
  spdlog::info(
      "init from {}: {} tensors loaded as they are, {} adapted, {} re-initialised, {} "
      "in the file unused",
      train.init, report.loaded.size(), report.adapted.size(), report.reinitialised.size(),
      report.unused.size());
  for (const auto& line : report.adapted)
    spdlog::info("init: adapted {}", line);
  for (const auto& line : report.reinitialised)
    spdlog::info("init: re-initialised {}", line);
  if (!report.unused.empty())
    spdlog::warn("init: unused from the file: {}", some_of(report.unused));
  return report;
}

}  // namespace vit
