#pragma once
// WebDataset's shard names: brace patterns such as "train-{000000..000146}.tar"
// (a numeric range, zero-padded to its first bound's width) or
// "{train,extra}-{0..9}.tar" (a list), as webdataset, timm and OpenCLIP write them.
#include <filesystem>
#include <string>
#include <vector>

namespace vit::data {

// Every name the pattern stands for, in order (the braces expand left to
// right, the rightmost fastest). A pattern without braces is itself. Braces
// do not nest; a list may have empty items ("a{,-b}": "a", "a-b") and one
// item ("{a}": "a"); a range's bounds are non-negative decimal integers.
// Throws vit::Error naming the pattern for an unmatched (or nested) brace,
// an empty list, a range whose bounds are not both such integers, a
// descending range, or more than 1,000,000 names.
std::vector<std::string> expand_braces(const std::string& pattern);

// The expanded names as files under `root` (a relative pattern is taken from
// `root`, an absolute one as it is). Every file must exist (as a regular
// file, or a link to one): the first one missing is an error naming it and
// the pattern, and a pattern that matches no file at all says so ("matches
// nothing under ROOT"). `key` names the setting in the errors (e.g.
// "data.train_shards"), before the pattern errors of expand_braces too.
std::vector<std::filesystem::path> shard_files(const std::string& pattern,
                                               const std::filesystem::path& root,
                                               const std::string& key);

}  // namespace vit::data
