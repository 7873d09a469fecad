#pragma once
// Write-then-rename, so a crash or a full disk never leaves a damaged file
// where a good one is expected.
#include <cstddef>
#include <functional>
#include <string>

namespace vit {

// Calls write(temp_path) for a temporary file next to `path`, then renames it
// over `path`. If write throws or the rename fails, the temporary file is
// removed, `path` is left as it was, and a vit::Error names the path.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

// Writes `size` bytes to `path` (not atomically), checking every write and
// the close, so a full disk is an error naming the file and errno's reason.
void write_bytes(const std::string& path, const void* data, size_t size);

// Writes `text` to `path` atomically.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace vit
