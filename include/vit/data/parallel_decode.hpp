#pragma once
// Decoding many image files at once, on a pool of std::threads.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::data {

struct DecodedImages {
  at::Tensor images;                 // uint8 (M, C, S, S): the files that decoded, in order
  std::vector<int64_t> kept;         // for each of the M images, its index in `files`
  std::vector<std::string> skipped;  // the error message of each file left out
};

// Reads every file as `channels` x `side` x `side` (gray replicated to RGB or
// RGB reduced to luma; other sizes resized) on `workers` threads (0 = one per
// core, at least 2). A file that fails is an error naming it, or, when
// `skip_corrupt`, is left out with a warning. Logs progress on long runs.
DecodedImages decode_images(const std::vector<std::filesystem::path>& files, int64_t channels,
                            int64_t side, bool skip_corrupt, int64_t workers = 0);

}  // namespace vit::data
