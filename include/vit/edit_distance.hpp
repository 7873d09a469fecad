#pragma once
// The "did you mean" of a mistyped name: config keys, timm architectures.
#include <cstddef>
#include <string>
#include <vector>

namespace vit {

// Levenshtein distance: single-character insertions, deletions, substitutions.
size_t edit_distance(const std::string& a, const std::string& b);

// Up to `most` of `candidates` nearest to `name`, nearest first (ties in
// the candidates' order).
std::vector<std::string> closest_names(const std::string& name,
                                       const std::vector<std::string>& candidates, size_t most);

}  // namespace vit
