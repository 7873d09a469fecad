#pragma once
// Our own checkpoint file (.pt): a LibTorch archive with the model's parameters
// under "model/", the training state (train/training_checkpoint.hpp), and a JSON
// string "meta" that makes the file self-describing. This header reads the model
// part only, so analysis and inference never depend on the trainer.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/serialize/input-archive.h>
#include <nlohmann/json.hpp>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

constexpr int64_t kCheckpointFormatVersion = 1;

struct CheckpointMeta {
  int64_t format_version = kCheckpointFormatVersion;
  Config config;                         // fully resolved, architecture included
  std::vector<std::string> class_names;  // label order
  int64_t epoch = 0;                     // epochs completed when saved
  int64_t step = 0;                      // optimizer steps completed when saved
  double best_metric = 0.0;              // best validation accuracy so far
  int64_t best_step = 0;                 // step of that validation
  int64_t validations_since_best = 0;    // early-stopping counter
  bool finished = false;                 // the run ended (epochs done or patience exhausted)
  std::string stop_reason;               // why it ended, when finished
  double elapsed_s = 0;                  // run time up to this checkpoint, over every resumed run
  // Every other key of the JSON object, carried unread: the trainer's own records
  // (train/running_totals.hpp).
  nlohmann::json trainer = nlohmann::json::object();
};

std::string meta_to_json(const CheckpointMeta& meta);
CheckpointMeta meta_from_json(const std::string& text, const std::string& source);

// The architecture fields in which two model configs differ ("depth 6 vs 8"); empty
// when the same tensors fit both.
std::vector<std::string> architecture_differences(const ModelConfig& a, const ModelConfig& b);

// A model ready for inference, from a .pt or a timm-layout .safetensors file.
struct LoadedModel {
  VisionTransformer model{nullptr};
  Config config;
  std::vector<std::string> class_names;  // "0", "1", ... when the file has none
  std::string path;
};

// .pt: the config comes from the file (config_path, when given, must agree on the
// architecture); .safetensors: from __metadata__["vit_config"] or config_path.
// Returns the model in eval mode on the CPU.
LoadedModel load_model(const std::string& path, const std::optional<std::string>& config_path = {});

// The weights' average (train.ema) of a training checkpoint (vit export --ema); a
// vit::Error when the run kept none, or `path` is not a .pt file.
LoadedModel load_model_average(const std::string& path);

// The given one, or runs/latest/best.pt.
std::string resolve_checkpoint_path(const std::optional<std::string>& given,
                                    const std::string& runs_dir = "runs");

// Names used inside the archive, shared with train/training_checkpoint.cpp.
constexpr const char* kMetaKey = "meta";
constexpr const char* kModelKey = "model";
constexpr const char* kModelEmaKey = "model_ema";

// After every zip record passed its CRC-32 check; a vit::Error for a damaged or
// foreign file.
torch::serialize::InputArchive open_checkpoint_archive(const std::string& path);

// A vit::Error when the archive has none.
CheckpointMeta read_meta_record(torch::serialize::InputArchive& archive, const std::string& path);

}  // namespace vit
