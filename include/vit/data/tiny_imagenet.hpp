#pragma once
// Tiny-ImageNet-200 in its official layout (http://cs231n.stanford.edu/tiny-imagenet-200.zip):
//   wnids.txt                       one WordNet id per line; fixes the class order
//   words.txt                       "<wnid>\t<names, comma separated>" (optional here)
//   train/<wnid>/images/*.JPEG      500 per class, 64 x 64
//   val/images/val_<k>.JPEG         10,000, labelled by val/val_annotations.txt
//   val/val_annotations.txt         "<file>\t<wnid>\t<box>" per line
// test/ has no labels and is ignored; the official val set is our test split.
#include <filesystem>

#include "vit/data/image_listing.hpp"

namespace vit::data {

// The files and labels, with every index file checked (unknown or repeated
// wnids, malformed annotation lines, missing folders) and errors naming the
// file and line. Class names are the first name of each wnid in words.txt.
ImageListing list_tiny_imagenet(const std::filesystem::path& root);

// Decoded to RGB 64 x 64 (gray images replicated), through the cache.
DatasetPair load_tiny_imagenet(const std::filesystem::path& root, const ImageLoadOptions& options);

}  // namespace vit::data
