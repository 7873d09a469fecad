#pragma once
// A .pt checkpoint is a zip archive whose reader in LibTorch trusts every record (a
// damaged one can crash it: docs/robustness.md), so every record is checked here
// first. This catches damage (a truncated copy, bit rot, a half-written download),
// not malice: untrusted weights belong in .safetensors.
#include <optional>
#include <string>

namespace vit {

// The first problem found in the zip archive at `path` (its structure, ZIP64
// included, an unsupported compression method, or a record whose bytes do not match
// their size or CRC-32); nothing when all records check. Throws vit::Error only when
// the file cannot be opened.
std::optional<std::string> zip_archive_problem(const std::string& path);

}  // namespace vit
