#pragma once
// One listing of an image folder for all the torchrun ranks of a machine. The
// first rank to take the listing file's lock lists the folder and writes the
// list to the cache folder; the others, once the lock is theirs, map that file
// read-only. So the ranks share one copy of the file list's pages instead of
// holding one each. The file stays for later runs and is used while it matches:
// the same root and layout, and the root, train/, val/, test/ and every class
// folder with the modification times they had (a folder's time changes when a
// file in it is added, removed or renamed; an image edited in place keeps its name).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "vit/data/image_listing.hpp"

namespace vit::data {

// list() shared through "<cache_dir>/image-folder-list-<hash of root>.bin" (cache_dir
// "" = ~/.cache/vit). Where the file cannot be written, list() itself, with a warning.
ImageListing shared_image_folder_listing(const std::filesystem::path& root, bool val_folder,
                                         const std::string& cache_dir,
                                         const std::function<ImageListing()>& list);

// What the listing file must have been made from: the root, the layout and the
// folders' modification times.
std::string image_folder_key(const std::filesystem::path& root, bool val_folder);

// The file: written atomically; mapped back when it was made with `key` and its
// CRC-32 holds, else nullopt (absent, stale or damaged).
void write_listing_file(const std::filesystem::path& file, const std::string& key,
                        const ImageListing& listing);
std::optional<ImageListing> map_listing_file(const std::filesystem::path& file,
                                             const std::string& key);

}  // namespace vit::data
