#pragma once
// A weights file mapped into memory instead of read into a buffer: the
// tensors view its pages, which the kernel reads in as they are touched, and
// a reader that copies the tensors into a model one by one gives each
// tensor's pages back after its copy. So opening a model holds the model plus
// about one tensor of the file, not the model plus the whole file.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace vit {

// The first `size` bytes of `path` as a kByte tensor on a private (copy on
// write) mapping, unmapped when the last tensor viewing it goes; an undefined
// tensor where the file cannot be mapped (the caller then reads it).
at::Tensor map_file(const std::string& path, uint64_t size);

// Gives back the resident pages that lie wholly inside `t`'s bytes when `t`
// views a mapping of map_file's (they are read from the file again if touched
// again); does nothing for any other tensor.
void release_mapped_pages(const at::Tensor& t);

}  // namespace vit
