#pragma once
// MNIST and Fashion-MNIST in the IDX format (http://yann.lecun.com/exdb/mnist/):
// a big-endian header (magic 2051 for images, 2049 for labels, then the
// dimensions) followed by unsigned bytes. Files may be gzipped (".gz") or plain.
#include <filesystem>
#include <string>

#include "vit/config.hpp"
#include "vit/data/dataset.hpp"

namespace vit::data {

// uint8 (N, 1, H, W). Checks the magic, the dimensions and the byte count.
at::Tensor read_idx_images(const std::filesystem::path& file);
// int64 (N). Checks the magic and the byte count (labels are range-checked by the caller).
at::Tensor read_idx_labels(const std::filesystem::path& file);

// The file for `stem` (e.g. "train-images-idx3-ubyte") in `root`: the plain
// file, "<stem>.gz", or the "train-images.idx3-ubyte" spelling some mirrors use.
std::filesystem::path find_idx_file(const std::filesystem::path& root, const std::string& stem);
// The same file, or "" when there is none.
std::filesystem::path idx_file_or_empty(const std::filesystem::path& root, const std::string& stem);

// `dataset` is "mnist" or "fashion-mnist"; they differ only in class names.
DatasetPair load_mnist(const std::filesystem::path& root, DatasetKind dataset);

}  // namespace vit::data
