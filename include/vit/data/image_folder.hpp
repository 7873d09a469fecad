#pragma once
// Users' own images: one folder per class.
//   root/<class>/*.{png,jpg,jpeg,bmp,webp}             everything is training data
//   root/train/<class>/...  and  root/test/<class>/... (or root/val/...)  for a test split
//   root/train/<class>/...  and  root/val/<class>/...  as ImageNet: val/ validates
// Classes are the sorted names of the training class folders; the other
// folders may only use those names. Every image is decoded to `channels` x
// `side` x `side`.
#include <cstdint>
#include <filesystem>

#include "vit/data/image_listing.hpp"

namespace vit::data {

// The listing's evaluation files: with `val_folder`, root/val (which must
// exist); else root/test, or root/val where there is no test/.
ImageListing list_image_folder(const std::filesystem::path& root, int64_t channels, int64_t side,
                               bool val_folder = false);

DatasetPair load_image_folder(const std::filesystem::path& root, int64_t channels, int64_t side,
                              const ImageLoadOptions& options);

}  // namespace vit::data
