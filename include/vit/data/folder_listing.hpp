#pragma once
// Listing the images of many folders at once (ImageNet's 1,000 class
// folders): each folder on its own thread, because on network filesystems a
// directory read mostly waits, and the result in the folders' order, as one
// compact FileList. A listing that takes more than 2 s logs its progress
// every 2 s.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "vit/data/file_list.hpp"

namespace vit::data {

// The image files among `dir`'s entries: regular files (or links to them)
// whose extension is one of `extensions` (lower case, with the dot; matched
// case-insensitively), by name. Throws a one-line error when `dir` is
// missing or cannot be read.
std::vector<std::string> image_names(const std::filesystem::path& dir,
                                     const std::vector<std::string>& extensions);

struct LabelledFolder {
  std::filesystem::path dir;
  int64_t label = 0;
};

// The images of every folder (image_names), the folders in the order given,
// each file labelled with its folder's label. `threads` <= 0: 8.
FileList list_labelled_folders(const std::vector<LabelledFolder>& folders,
                               const std::vector<std::string>& extensions, int64_t num_classes,
                               int64_t threads = 0);

}  // namespace vit::data
