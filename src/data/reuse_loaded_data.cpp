#include "vit/data/reuse_loaded_data.hpp"

#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

namespace vit::data {

namespace {

// One command's state: commands load on one thread, so no lock is needed.
struct Kept {
  int scopes = 0;
  std::optional<std::pair<std::string, DataSplits>> splits;
};

Kept& kept() {
  static Kept state;
  return state;
}

}  // namespace

ReuseLoadedData::ReuseLoadedData() {
  ++kept().scopes;
}

ReuseLoadedData::~ReuseLoadedData() {
  if (--kept().scopes == 0) kept().splits.reset();
}

std::string loaded_data_key(const Config& config) {
  const nlohmann::json key = {{"data", config_to_json(config)["data"]},
                              {"seed", config.seed},
                              {"channels", config.model.channels},
                              {"image_size", config.model.image_size},
                              {"num_classes", config.model.num_classes}};
  return key.dump();
}

const DataSplits* reusable_splits(const std::string& key) {
  const Kept& state = kept();
  if (state.scopes == 0 || !state.splits || state.splits->first != key) return nullptr;
  return &state.splits->second;
}

void keep_splits(const std::string& key, const DataSplits& splits) {
  Kept& state = kept();
  if (state.scopes > 0) state.splits.emplace(key, splits);
}

}  // namespace vit::data
