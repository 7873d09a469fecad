#pragma once
// WebDataset's shard names: brace patterns such as "train-{000000..000146}.tar"
// (a numeric range, zero-padded to its first bound's width) or
// "{train,extra}-{0..9}.tar" (a list), as webdataset, timm and OpenCLIP write them.
#include <filesystem>
#include <string>
#include <vector>

namespace vit::data {

// Every name the pattern stands for, in order (the rightmost braces fastest).
// Braces do not nest; a list may have empty items ("a{,-b}": "a", "a-b") or one;
// a range's bounds are non-negative decimal integers. Throws vit::Error naming the
// pattern for an unmatched or nested brace, an empty list, a bad or descending
// range, or more than 1,000,000 names.
std::vector<std::string> expand_braces(const std::string& pattern);

// The expanded names as files under `root` (an absolute pattern as it is). Every
// file must exist (a regular file, or a link to one); errors name the first one
// missing, the pattern, and the setting `key` ("data.train_shards").
std::vector<std::filesystem::path> shard_files(const std::string& pattern,
                                               const std::filesystem::path& root,
                                               const std::string& key);

}  // namespace vit::data
