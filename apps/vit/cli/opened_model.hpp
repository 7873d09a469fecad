#pragma once
// The model a command reads: --checkpoint, --config and --out, how the
// checkpoint (or timm file) is opened with its dataset, and where the
// command's files go by default.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit::cli {

// --checkpoint or runs/latest/best.pt; --config for timm safetensors files.
// The model comes back in eval mode on `device`.
LoadedModel open_checkpoint(const std::optional<std::string>& checkpoint,
                            const std::optional<std::string>& config_path, c10::Device device);

struct ModelSource {
  std::optional<std::string> checkpoint;  // --checkpoint CKPT (default runs/latest/best.pt)
  std::optional<std::string> config;      // --config FILE (a timm .safetensors file's architecture)
  std::string out;                        // --out DIR (default: see output_folder)
};

// How a command takes --out.
enum class OutFolder {
  kNone,              // no --out: the command prints
  kBesideCheckpoint,  // optional, default a folder next to the checkpoint
  kRequired,
};

// --checkpoint, --config (the architecture of a timm file, and with
// `reads_data` its data too) and, unless kNone, --out, whose help says what
// the folder receives (`holds`) and, for kBesideCheckpoint, its default
// `default_name` next to the checkpoint.
void add_model_source_options(CLI::App& cmd, ModelSource& source, bool reads_data, OutFolder out,
                              const std::string& holds = "", const std::string& default_name = "");

// A model opened for analysis, and the dataset of its config, read on first
// use and then kept: `vit report` runs every analysis on one OpenedModel, so
// the checkpoint and the data are read once.
class OpenedModel {
 public:
  OpenedModel(c10::Device device, LoadedModel loaded);
  c10::Device device;
  LoadedModel loaded;  // in eval mode, on `device`
  // The splits of loaded.config's data; callers must not write into them.
  const data::DataSplits& data();
  // A split's images at hand: the split itself when it is in memory; when the
  // data streams, kStreamedAnalysisImages of them (data::materialize_sample),
  // decoded as evaluation decodes them (once, then kept).
  const data::Dataset& images(data::SplitName which);

 private:
  std::optional<data::DataSplits> data_;
  std::map<data::SplitName, data::Dataset> decoded_;  // streamed splits' images, by split
};

// A vit::Error for a model without a head (num_classes 0, a backbone such as
// DINOv2's), whose output is features, not logits: `command` reads logits.
void require_head(const LoadedModel& loaded, const std::string& command);

// Images decoded from a streamed split for the analyses and probes.
inline constexpr int64_t kStreamedAnalysisImages = 2048;

// The opening of every command that reads a model: the common options
// (threads, seed, log level), the device, and the checkpoint it names or
// runs/latest/best.pt, logged.
OpenedModel open_model(const CommonOptions& common, const ModelSource& source);

// What an analysis command does once its model is open: write its files and
// return the JSON document it wrote, for `vit report`'s page.
template <typename Options>
using Analysis = nlohmann::json (*)(OpenedModel&, const Options&);

// The command's run function: open the model its options name, then analyse.
template <typename Options>
std::function<int(const Options&)> on_opened_model(Analysis<Options> analysis) {
  return [analysis](const Options& o) {
    OpenedModel opened = open_model(o.common, o.model);
    analysis(opened, o);
    return 0;
  };
}

// The one default-output rule: --out, or `default_name` in the checkpoint's folder.
std::filesystem::path output_folder(const ModelSource& source, const LoadedModel& loaded,
                                    const std::string& default_name);

}  // namespace vit::cli
