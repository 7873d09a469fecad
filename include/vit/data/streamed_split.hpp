#pragma once
// A split whose images stay on disk, for data/stream_loader.hpp: what to read, never
// the pixels. Either image files with their labels, as rows of a file list the
// dataset's splits share, or WebDataset shards with their sample counts.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/data/file_list.hpp"

namespace vit::data {

struct StreamedSplit {
  std::shared_ptr<const FileList> list;  // image files with their labels; null: none
  // The rows of `list` this split reads, in order; null: all of them. Shared, so a
  // copy of a split copies no file names and no rows.
  std::shared_ptr<const std::vector<uint32_t>> rows;
  std::vector<std::filesystem::path> shards;  // or WebDataset shards
  std::vector<int64_t> shard_samples;         // samples in each shard
  std::vector<std::string> classes;           // class names, in label order
  std::string source;                         // e.g. "image-folder /data/imagenet/train"

  // Every file of `list`, in order.
  static StreamedSplit of_files(std::shared_ptr<const FileList> list,
                                std::vector<std::string> classes, std::string source);

  bool from_shards() const { return !shards.empty(); }
  int64_t size() const;  // images
  // Files only.
  std::filesystem::path path(int64_t i) const;
  int64_t label(int64_t i) const;
  int64_t row(int64_t i) const;  // image `i`'s row of `list`
  int64_t num_classes() const { return static_cast<int64_t>(classes.size()); }

  // The files at `indices` (int64, any order), with their labels. Files only.
  StreamedSplit subset(const at::Tensor& indices) const;
  // This process's share of an evaluation split under `world` ranks: rows
  // [N * rank / world, N * (rank + 1) / world), or the shards rank, rank + world, ...
  StreamedSplit share(int64_t rank, int64_t world) const;
  // The labels as int64 (N), for the stratified splits. Files only.
  at::Tensor label_tensor() const;
};

}  // namespace vit::data
