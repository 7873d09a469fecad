#include "cli/opened_model.hpp"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "vit/data/download/hub_download.hpp"
#include "vit/data/materialize.hpp"

namespace vit::cli {

LoadedModel open_checkpoint(const std::optional<std::string>& checkpoint,
                            const std::optional<std::string>& config_path, c10::Device device) {
  const std::string path = resolve_checkpoint_path(checkpoint);
  spdlog::info("using checkpoint {}", path);
  data::fetch_hf_hub_if_named(path);
  LoadedModel loaded = load_model(path, config_path);
  loaded.model->to(device);
  loaded.model->eval();
  return loaded;
}

void add_model_source_options(CLI::App& cmd, ModelSource& source, bool reads_data, OutFolder out,
                              const std::string& holds, const std::string& default_name) {
  add_checkpoint_options(cmd, source.checkpoint, source.config, reads_data);
  if (out == OutFolder::kNone) return;
  std::string help = "output folder for " + holds;
  if (out == OutFolder::kBesideCheckpoint)
    help += " (default: " + default_name + " next to the checkpoint)";
  auto* option = cmd.add_option("--out", source.out, help);
  if (out == OutFolder::kRequired) option->required();
}

OpenedModel::OpenedModel(c10::Device device, LoadedModel loaded)
    : device(device), loaded(std::move(loaded)) {}

const data::DataSplits& OpenedModel::data() {
  if (!data_) data_ = data::load_data(loaded.config);
  return *data_;
}

const data::Dataset& OpenedModel::images(data::SplitName which) {
  const data::DataSplits& splits = data();
  if (!splits.streamed)
    return which == data::SplitName::kTrain ? splits.train
           : which == data::SplitName::kVal ? splits.val
                                            : splits.test;
  auto it = decoded_.find(which);
  if (it != decoded_.end()) return it->second;
  const auto& s = *splits.streamed;
  const data::StreamedSplit& split = which == data::SplitName::kTrain ? s.train
                                     : which == data::SplitName::kVal ? s.val
                                                                      : s.test;
  const int64_t n = std::min(kStreamedAnalysisImages, split.size());
  spdlog::info("the data streams: decoding {} of the {} images of {} for the analysis", n,
               split.size(), split.source);
  return decoded_.emplace(which, data::materialize_sample(split, loaded.config, n)).first->second;
}

void require_head(const LoadedModel& loaded, const std::string& command) {
  if (loaded.config.model.num_classes > 0) return;
  throw Error(loaded.path + " has no classifier head (num_classes 0: a backbone, its output is " +
              "features): vit " + command + " reads class logits; the attention analyses " +
              "(rollout, attn-distance, attention, cka, pos-embed, filters) and lens's token "
              "norms need none, and vit train --init " +
              loaded.path + " gives it a head");
}

OpenedModel open_model(const CommonOptions& common, const ModelSource& source) {
  apply_common_options(common);
  const c10::Device device = chosen_device(common);
  return {device, open_checkpoint(source.checkpoint, source.config, device)};
}

std::filesystem::path output_folder(const ModelSource& source, const LoadedModel& loaded,
                                    const std::string& default_name) {
  if (!source.out.empty()) return source.out;
  return std::filesystem::path(loaded.path).parent_path() / default_name;
}

}  // namespace vit::cli
