#pragma once
// A split whose images stay on disk, read and decoded every epoch by the
// stream loader (data/stream_loader.hpp): what to read, never the pixels.
// Either image files with their labels (image folders), as rows of a file
// list that the dataset's splits share, or WebDataset shards with the number
// of samples each holds.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/data/file_list.hpp"

namespace vit::data {

struct StreamedSplit {
  std::shared_ptr<const FileList> list;  // image files with their labels (null: none), and
  // the rows of `list` this split reads, in order; null: all of them (a
  // whole folder then costs no row numbers). Shared too: a copy of a split
  // (the trainer's, its loader's) copies no file names and no rows. Or
  std::shared_ptr<const std::vector<uint32_t>> rows;
  std::vector<std::filesystem::path> shards;  // WebDataset shards
  std::vector<int64_t> shard_samples;         // samples in each shard
  std::vector<std::string> classes;           // class names, in label order
  std::string source;                         // e.g. "image-folder /data/imagenet/train"

  // Every file of `list`, in order.
  static StreamedSplit of_files(std::shared_ptr<const FileList> list,
                                std::vector<std::string> classes, std::string source);

  bool from_shards() const { return !shards.empty(); }
  int64_t size() const;  // images
  // The file of image `i` of this split, and its label. Files only.
  std::filesystem::path path(int64_t i) const;
  int64_t label(int64_t i) const;
  // The row of `list` that image `i` of this split is.
  int64_t row(int64_t i) const;
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
