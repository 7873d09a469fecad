#pragma once
// Our own checkpoint file (.pt): a LibTorch archive holding the model's
// parameters under "model/", the training state under "optimizer/" and "rng/"
// (see train/training_checkpoint.hpp), and one JSON string "meta" that makes the file
// self-describing: format version, the resolved config, class names, epoch,
// step and best metric, and the trainer's own records. This header reads the
// model part only, so analysis and inference never depend on the trainer.
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
  // The trainer's own records in the same JSON object (train/running_totals.hpp
  // reads and writes them), carried here unread: every key that is not one above.
  nlohmann::json trainer = nlohmann::json::object();
};

std::string meta_to_json(const CheckpointMeta& meta);
CheckpointMeta meta_from_json(const std::string& text, const std::string& source);

// The architecture fields in which two model configs differ, as
// "depth 6 vs 8"; empty when the same tensors fit both.
std::vector<std::string> architecture_differences(const ModelConfig& a, const ModelConfig& b);

// A model ready for inference, from a .pt or a timm-layout .safetensors file.
struct LoadedModel {
  VisionTransformer model{nullptr};
  Config config;
  std::vector<std::string> class_names;  // "0", "1", ... when the file has none
  std::string path;
};

// .pt: the config comes from the file (config_path, when given, must agree on
// the architecture). .safetensors: from __metadata__["vit_config"] or config_path.
// The model is returned in eval mode on the CPU.
LoadedModel load_model(const std::string& path, const std::optional<std::string>& config_path = {});

// The weights' average a training checkpoint holds (train.ema), as a model
// (vit export --ema); a vit::Error when the run kept none, or `path` is not
// a .pt file.
LoadedModel load_model_average(const std::string& path);

// The checkpoint a command uses: the given one, or runs/latest/best.pt.
std::string resolve_checkpoint_path(const std::optional<std::string>& given,
                                    const std::string& runs_dir = "runs");

// Names used inside the archive, shared with train/training_checkpoint.cpp.
constexpr const char* kMetaKey = "meta";
constexpr const char* kModelKey = "model";
constexpr const char* kModelEmaKey = "model_ema";

// The .pt file's archive, after every zip record passed its CRC-32 check
// (weights/zip_check.hpp); a vit::Error for a damaged or foreign file.
torch::serialize::InputArchive open_checkpoint_archive(const std::string& path);

// The archive's "meta" record; a vit::Error when it has none.
CheckpointMeta read_meta_record(torch::serialize::InputArchive& archive, const std::string& path);

}  // namespace vit
