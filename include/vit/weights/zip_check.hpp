#pragma once
// A .pt checkpoint is a zip archive (LibTorch's PyTorchStreamWriter): records
// stored, or deflated for larger code files, with a CRC-32 of each record's
// bytes in the central directory. LibTorch's reader is built with miniz's
// CRC checks turned off and trusts every record it reads; a damaged record
// can take its TorchScript importer into a segmentation fault (LibTorch
// 1.13, see docs/robustness.md). So every record is checked here first.
//
// This catches damage (a truncated copy, bit rot, a half-written download),
// not malice: a file crafted with correct CRCs still reaches LibTorch's
// parser. Untrusted weights belong in .safetensors, which vit reads with its
// own checked parser.
#include <optional>
#include <string>

namespace vit {

// The first problem found in the zip archive at `path`: its structure
// (end-of-central-directory record, ZIP64 included; every header and record
// inside the file), an unsupported compression method, or a record whose
// bytes do not match their size or CRC-32. Nothing when all records check.
// Reads each record once, in 1 MiB pieces. Throws vit::Error only when the
// file cannot be opened.
std::optional<std::string> zip_archive_problem(const std::string& path);

}  // namespace vit
