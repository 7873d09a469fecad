#pragma once
// A dataset held in memory the way the batch loader wants it: one uint8
// tensor of all images, so batches are made by indexing, never by decoding.
// Key: N images, C channels (1 = gray, 3 = RGB), H x W pixels.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::data {

struct Dataset {
  at::Tensor images;                 // uint8 (N, C, H, W), contiguous, CPU
  at::Tensor labels;                 // int64 (N), each in [0, classes.size())
  std::vector<std::string> classes;  // class names, in label order
  std::string source;                // where it came from, e.g. "cifar-10 test_batch.bin"

  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  int64_t num_classes() const { return static_cast<int64_t>(classes.size()); }
  // The images and labels at `indices` (int64, any order); names are shared.
  Dataset subset(const at::Tensor& indices) const;
};

// What a reader gives: the official training set and the official test set
// (for Tiny-ImageNet the labelled `val` folder). The validation split is cut
// from `train` later (see split.hpp), so readers never decide it.
struct DatasetPair {
  Dataset train;
  Dataset test;
};

// Images per class, int64 (K). Throws naming `where` if a label is outside [0, K).
at::Tensor class_counts(const at::Tensor& labels, int64_t num_classes, const std::string& where);

// Joins datasets with the same class list and image shape along N.
Dataset concat(const std::vector<Dataset>& parts, const std::string& source);

}  // namespace vit::data
