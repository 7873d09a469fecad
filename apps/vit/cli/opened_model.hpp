#pragma once
// The model a command reads: --checkpoint, --config and --out, how it is opened with
// its dataset, and where the command's files go by default.
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

// --checkpoint or runs/latest/best.pt; --config for timm safetensors files. The
// model comes back in eval mode on `device`.
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

// --checkpoint, --config (with `reads_data`, the data too) and, unless kNone, --out,
// whose help names what it `holds` and its default `default_name`.
void add_model_source_options(CLI::App& cmd, ModelSource& source, bool reads_data, OutFolder out,
                              const std::string& holds = "", const std::string& default_name = "");

// A model opened for analysis, and its config's dataset, read on first use and kept
// (`vit report` runs every analysis on one OpenedModel).
class OpenedModel {
 public:
  OpenedModel(c10::Device device, LoadedModel loaded);
  c10::Device device;
  LoadedModel loaded;  // in eval mode, on `device`
  // The splits of loaded.config's data; callers must not write into them.
  const data::DataSplits& data();
  // A split's images at hand: the split itself when in memory; when the data streams,
  // kStreamedAnalysisImages of them, decoded as evaluation does (once, then kept).
  const data::Dataset& images(data::SplitName which);

 private:
  std::optional<data::DataSplits> data_;
  std::map<data::SplitName, data::Dataset> decoded_;  // streamed splits' images, by split
};

// Throws vit::Error for a model without a head (num_classes 0), whose output is
// features, not the logits `command` reads.
void require_head(const LoadedModel& loaded, const std::string& command);

// Images decoded from a streamed split for the analyses and probes.
inline constexpr int64_t kStreamedAnalysisImages = 2048;

// The opening of every command that reads a model: the common options, the device,
// and the checkpoint, logged.
OpenedModel open_model(const CommonOptions& common, const ModelSource& source);

// An analysis once its model is open: writes its files and returns the JSON document
// it wrote, for `vit report`'s page.
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
