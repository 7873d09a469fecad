#pragma once
// The safetensors format (huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON
//   {NAME: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {STR: STR}}
// then the raw little-endian tensor bytes, offsets counting from their start. A
// hostile file can only produce a vit::Error.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

namespace vit {

using TensorMap = std::map<std::string, at::Tensor>;
using StringMap = std::map<std::string, std::string>;

struct SafetensorsContents {
  TensorMap tensors;   // CPU, contiguous, in the dtype the file stores
  StringMap metadata;  // the header's "__metadata__", empty when absent
};

// Largest header the reader accepts; the official implementation uses the same cap.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// "F32" <-> at::kFloat. Supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL; anything
// else is a vit::Error.
at::ScalarType safetensors_dtype(const std::string& name);
std::string safetensors_dtype_name(at::ScalarType dtype);

// The tensors view the file, mapped (mapped_file.hpp), or share one buffer of its
// data section where it cannot be mapped (a misaligned one gets its own copy);
// any tensor still held keeps it. Errors name `path`.
SafetensorsContents read_safetensors(const std::string& path);
// Parses bytes in memory; the tensors are copies. Errors name `source_name`.
SafetensorsContents parse_safetensors(const uint8_t* data, size_t size,
                                      const std::string& source_name);

// The file's bytes, laid out as the official writer does. Tensors may live on any
// device and in any supported dtype; they are stored as they are.
std::vector<uint8_t> serialize_safetensors(const TensorMap& tensors,
                                           const StringMap& metadata = {});
// Writes the same bytes atomically; on failure nothing is left behind and the
// vit::Error names `path`.
void write_safetensors(const std::string& path, const TensorMap& tensors,
                       const StringMap& metadata = {});

// Every tensor converted to `dtype` (e.g. the F16 or BF16 of a checkpoint to F32).
TensorMap to_dtype(const TensorMap& tensors, at::ScalarType dtype);

}  // namespace vit
