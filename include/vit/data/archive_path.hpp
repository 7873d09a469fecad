#pragma once
// The names inside an archive (a download's entries, a shard's members, the
// targets of their links) are untrusted: one that is absolute or climbs with
// ".." could lead outside the folder it is meant to stay in.
#include <string>
#include <vector>

namespace vit::data {

// The parts of a name inside an archive, split at '/', without the empty and
// "." ones: "./a//b/" -> {"a", "b"}.
std::vector<std::string> archive_path_parts(const std::string& name);

// What lets `name` lead outside its folder: "an absolute path", "a path with
// '..'", or "" when nothing does (an empty name is the caller's to judge).
std::string path_escape(const std::string& name);

}  // namespace vit::data
