#include "vit/data/dataset.hpp"

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit::data {

Dataset Dataset::subset(const at::Tensor& indices) const {
  Dataset out;
  out.images = images.index_select(0, indices);
  out.labels = labels.index_select(0, indices);
  out.classes = classes;
  out.source = source;
  return out;
}

at::Tensor class_counts(const at::Tensor& labels, int64_t num_classes, const std::string& where) {
  if (labels.numel() > 0) {
    const int64_t low = labels.min().item<int64_t>();
    const int64_t high = labels.max().item<int64_t>();
    if (low < 0 || high >= num_classes) {
      const int64_t bad = low < 0 ? low : high;
      const int64_t at = (labels == bad).nonzero()[0][0].item<int64_t>();
      throw Error(where + ": label " + std::to_string(bad) + " at index " + std::to_string(at) +
                  " is outside 0.." + std::to_string(num_classes - 1));
    }
  }
  return torch::bincount(labels, /*weights=*/{}, /*minlength=*/num_classes);
}

Dataset concat(const std::vector<Dataset>& parts, const std::string& source) {
  if (parts.empty()) throw Error(source + ": no data to join");
  std::vector<at::Tensor> images;
  std::vector<at::Tensor> labels;
  for (const auto& part : parts) {
    if (part.classes != parts.front().classes) {
      throw Error(source + ": " + part.source + " has other class names than " +
                  parts.front().source);
    }
    if (part.images.sizes().slice(1) != parts.front().images.sizes().slice(1)) {
      throw Error(source + ": " + part.source + " has images of another shape than " +
                  parts.front().source);
    }
    images.push_back(part.images);
    labels.push_back(part.labels);
  }
  Dataset out;
  out.images = torch::cat(images);
  out.labels = torch::cat(labels);
  out.classes = parts.front().classes;
  out.source = source;
  return out;
}

}  // namespace vit::data
