#pragma once
// A split whose images stay on disk, read and decoded every epoch by the
// stream loader (data/stream_loader.hpp): what to read, never the pixels.
// Either image files with their labels (image folders) or WebDataset shards
// with the number of samples each holds.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::data {

struct StreamedSplit {
  std::vector<std::filesystem::path> files;   // image files, or
  std::vector<int64_t> labels;                // one per file
  std::vector<std::filesystem::path> shards;  // WebDataset shards
  std::vector<int64_t> shard_samples;         // samples in each shard
  std::vector<std::string> classes;           // class names, in label order
  std::string source;                         // e.g. "image-folder /data/imagenet/train"

  bool from_shards() const { return !shards.empty(); }
  int64_t size() const;  // images
  int64_t num_classes() const { return static_cast<int64_t>(classes.size()); }

  // The files at `indices` (int64, any order), with their labels. Files only.
  StreamedSplit subset(const at::Tensor& indices) const;
  // This process's contiguous share of an evaluation split under `world`
  // ranks: rows [N * rank / world, N * (rank + 1) / world) of a file list,
  // or the shards rank, rank + world, ... of a shard list.
  StreamedSplit share(int64_t rank, int64_t world) const;
  // The labels as int64 (N), for the stratified splits. Files only.
  at::Tensor label_tensor() const;
};

}  // namespace vit::data
