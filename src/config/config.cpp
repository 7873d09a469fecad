// The settings' values by name (enums, train.freeze, device) and the
// per-dataset defaults. The field table is config_fields.hpp, which lists
// the units that read, write, check and describe it.
#include "vit/config.hpp"

#include <algorithm>

#include "fields.hpp"
#include "vit/error.hpp"

namespace vit {

namespace config_detail {

std::optional<FreezePlan> parsed_freeze(const std::string& freeze) {
  if (freeze == "none") return FreezePlan{};
  if (freeze == "backbone") return FreezePlan{FreezePlan::Kind::kBackbone, 0};
  const bool digits =
      !freeze.empty() && freeze.size() <= 7 &&
      std::all_of(freeze.begin(), freeze.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits) return std::nullopt;
  return FreezePlan{FreezePlan::Kind::kBlocks, std::stoll(freeze)};
}

}  // namespace config_detail

std::pair<std::vector<double>, std::vector<double>> dataset_norm_defaults(DatasetKind dataset) {
  switch (dataset) {
    case DatasetKind::kCifar10:
      break;
    case DatasetKind::kCifar100:
      return {{0.5071, 0.4865, 0.4409}, {0.2673, 0.2564, 0.2762}};
    case DatasetKind::kMnist:
      return {{0.1307}, {0.3081}};
    case DatasetKind::kFashionMnist:
      return {{0.2860}, {0.3530}};
    case DatasetKind::kTinyImagenet:
      return {{0.4802, 0.4481, 0.3975}, {0.2770, 0.2691, 0.2821}};
    case DatasetKind::kImageFolder:
      return {{0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}};
    case DatasetKind::kSynthetic:  // uniform bytes: mean 127.5/255, std 73.9/255
      return {{0.5, 0.5, 0.5}, {0.2898, 0.2898, 0.2898}};
    case DatasetKind::kWebdataset:  // ImageNet's, as timm's and DeiT's recipes use
      return {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}};
  }
  return {{0.4914, 0.4822, 0.4465}, {0.2470, 0.2435, 0.2616}};  // CIFAR-10
}

bool dataset_hflip_default(DatasetKind dataset) {
  return dataset != DatasetKind::kMnist;
}

std::ostream& operator<<(std::ostream& out, Pool pool) {
  return out << enum_name(pool);
}

std::ostream& operator<<(std::ostream& out, Precision precision) {
  return out << enum_name(precision);
}

std::ostream& operator<<(std::ostream& out, DatasetKind dataset) {
  return out << enum_name(dataset);
}

EvaluationTransform evaluation_transform(const DataConfig& data) {
  EvaluationTransform t;
  t.interpolation = data.interpolation;
  if (data.crop_mode == CropMode::kAuto && !data.augment.random_resized_crop) return t;
  t.mode = data.crop_mode == CropMode::kAuto ? CropMode::kCenter : data.crop_mode;
  t.crop_pct = data.crop_pct;
  return t;
}

FreezePlan freeze_plan(const std::string& freeze) {
  const auto plan = config_detail::parsed_freeze(freeze);
  if (!plan) throw Error("train.freeze is '" + freeze + "', expected none | backbone | N");
  return *plan;
}

std::optional<DeviceChoice> device_choice(const std::string& spec) {
  if (spec == "auto") return DeviceChoice{};
  if (spec == "cpu") return DeviceChoice{DeviceChoice::Kind::kCpu, 0};
  if (spec == "cuda") return DeviceChoice{DeviceChoice::Kind::kCuda, 0};
  const std::string prefix = "cuda:";
  if (spec.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string index = spec.substr(prefix.size());
  const bool digits =
      !index.empty() && index.size() <= 4 &&
      std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits) return std::nullopt;
  return DeviceChoice{DeviceChoice::Kind::kCuda, std::stoi(index)};
}

}  // namespace vit
