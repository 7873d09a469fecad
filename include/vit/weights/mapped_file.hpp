#pragma once
// A weights file mapped instead of read: opening a model holds the model plus
// about one tensor of the file, as each tensor's pages go back after its copy.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace vit {

// The first `size` bytes of `path` as a kByte tensor on a private mapping,
// unmapped with the last tensor viewing it; undefined where it cannot be mapped.
at::Tensor map_file(const std::string& path, uint64_t size);

// Gives back the pages wholly inside `t` if it views map_file's mapping; else nothing.
void release_mapped_pages(const at::Tensor& t);

}  // namespace vit
