#include "vit/weights/safetensors.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/weights/mapped_file.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian bytes; a big-endian host would need byte swaps");

constexpr size_t kPrefixBytes = 8;      // the u64 header length
constexpr size_t kHeaderAlign = 8;      // the writer pads the JSON to this
constexpr int kMaxJsonDepth = 16;       // a valid header nests 3 deep
constexpr size_t kMaxDims = 64;         // far beyond any real tensor
constexpr size_t kMaxQuotedChars = 80;  // names in messages are cut to this

// `rank` is the order of the official implementation's dtype enum, which
// grows with alignment; its writer lays tensors out by falling rank.
struct DtypeName {
  const char* name;
  at::ScalarType dtype;
  int rank;
};
constexpr DtypeName kDtypes[] = {
    {"F64", at::kDouble, 12},   {"F32", at::kFloat, 11}, {"F16", at::kHalf, 7},
    {"BF16", at::kBFloat16, 8}, {"I64", at::kLong, 13},  {"I32", at::kInt, 9},
    {"I16", at::kShort, 5},     {"I8", at::kChar, 2},    {"U8", at::kByte, 1},
    {"BOOL", at::kBool, 0},
};

int dtype_rank(at::ScalarType dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.rank;
  }
  return -1;
}

bool is_supported(at::ScalarType dtype) {
  return dtype_rank(dtype) >= 0;
}

std::string supported_dtypes() {
  std::string out;
  for (const auto& d : kDtypes)
    out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

// A name from an untrusted header, quoted and cut short so a message stays one readable line.
std::string quote_name(const std::string& s) {
  if (s.size() <= kMaxQuotedChars) return "'" + s + "'";
  return "'" + s.substr(0, kMaxQuotedChars) + "...'";
}

// What a JSON value is, for "X is a JSON string, expected ..." messages.
std::string describe(const json& v) {
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  return std::string("a JSON ") + v.type_name();
}

template <typename T>
std::string list_str(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(values[i]);
  }
  return out + "]";
}

// One tensor's header entry after every field has been checked.
struct Entry {
  std::string name;
  std::string dtype_name;
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data section
};

struct Header {
  std::vector<Entry> entries;
  StringMap metadata;
};

// nlohmann's parser keeps its own stack, but a fixed depth limit keeps every
// later walk over the value cheap and bounded, whatever the file holds.
void check_nesting(const uint8_t* text, size_t size, const std::string& source) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(text[i]);
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) {
        throw Error(source + ": header JSON nests deeper than " + std::to_string(kMaxJsonDepth) +
                    " levels at byte " + std::to_string(kPrefixBytes + i) +
                    " (a safetensors header nests 3 deep)");
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

json parse_json(const uint8_t* text, size_t size, const std::string& source) {
  check_nesting(text, size, source);
  json header;
  try {
    header = json::parse(text, text + size);
  } catch (const json::exception& e) {
    throw Error(source + ": header is not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object()) {
    throw Error(source + ": header is " + describe(header) + ", expected a JSON object of tensors");
  }
  return header;
}

const json& field(const json& entry, const char* key, const std::string& where) {
  auto it = entry.find(key);
  if (it == entry.end()) {
    throw Error(where + " has no \"" + key + "\" (expected dtype, shape and data_offsets)");
  }
  return *it;
}

// A JSON integer in [0, max], or nothing.
bool read_count(const json& v, uint64_t max, uint64_t& out) {
  if (!v.is_number_unsigned()) return false;  // nlohmann stores every integer >= 0 as unsigned
  out = v.get<uint64_t>();
  return out <= max;
}

std::vector<int64_t> parse_shape(const json& v, const std::string& where) {
  if (!v.is_array()) {
    throw Error(where + " shape is " + describe(v) +
                ", expected an array of non-negative integers");
  }
  if (v.size() > kMaxDims) {
    throw Error(where + " shape has " + std::to_string(v.size()) + " dimensions, more than " +
                std::to_string(kMaxDims));
  }
  std::vector<int64_t> shape;
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t dim = 0;
    if (!read_count(v[i], std::numeric_limits<int64_t>::max(), dim)) {
      throw Error(where + " shape[" + std::to_string(i) + "] is " + describe(v[i]) +
                  ", expected a non-negative integer");
    }
    shape.push_back(static_cast<int64_t>(dim));
  }
  return shape;
}

at::ScalarType parse_dtype(const json& v, const std::string& where, std::string& name) {
  if (!v.is_string()) throw Error(where + " dtype is " + describe(v) + ", expected a string");
  name = v.get<std::string>();
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.dtype;
  }
  throw Error(where + " has unknown dtype " + quote_name(name) +
              " (supported: " + supported_dtypes() + ")");
}

// Bytes that `shape` of `dtype` occupies, or false when the shape is too large
// for LibTorch. Zero dims count as 1 in that check because the strides of an
// empty tensor are still products of the other dims.
bool needed_bytes(const std::vector<int64_t>& shape, at::ScalarType dtype, uint64_t& bytes) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t extent = c10::elementSize(dtype);
  bool empty = false;
  for (int64_t dim : shape) {
    const uint64_t d = std::max<uint64_t>(static_cast<uint64_t>(dim), 1);
    if (extent > kMax / d) return false;
    extent *= d;
    empty = empty || dim == 0;
  }
  bytes = empty ? 0 : extent;
  return true;
}

Entry parse_entry(const std::string& name, const json& v, uint64_t data_size,
                  const std::string& source) {
  const std::string where = source + ": tensor " + quote_name(name);
  if (!v.is_object()) {
    throw Error(where + " is " + describe(v) +
                ", expected an object with dtype, shape and data_offsets");
  }
  Entry e;
  e.name = name;
  e.dtype = parse_dtype(field(v, "dtype", where), where, e.dtype_name);
  e.shape = parse_shape(field(v, "shape", where), where);

  const json& offsets = field(v, "data_offsets", where);
  if (!offsets.is_array() || offsets.size() != 2 ||
      !read_count(offsets[0], std::numeric_limits<uint64_t>::max(), e.begin) ||
      !read_count(offsets[1], std::numeric_limits<uint64_t>::max(), e.end)) {
    const std::string got =
        offsets.is_array() && offsets.size() <= 2 ? offsets.dump() : describe(offsets);
    throw Error(where + " data_offsets is " + got + ", expected [begin, end] (byte counts)");
  }
  const std::string range =
      " data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  if (e.end < e.begin) throw Error(where + range + " end before they begin");
  if (e.end > data_size) {
    throw Error(where + range + " run past the end of the " + std::to_string(data_size) +
                "-byte data section");
  }
  uint64_t needed = 0;
  const std::string shape_of = " shape " + list_str(e.shape) + " of " + e.dtype_name;
  if (!needed_bytes(e.shape, e.dtype, needed)) {
    throw Error(where + shape_of + " is too large (more than 2^63 bytes)");
  }
  if (e.end - e.begin != needed) {
    throw Error(where + range + " hold " + std::to_string(e.end - e.begin) + " bytes but" +
                shape_of + " needs " + std::to_string(needed));
  }
  return e;
}

StringMap parse_metadata(const json& v, const std::string& source) {
  StringMap metadata;
  if (v.is_null()) return metadata;
  if (!v.is_object()) {
    throw Error(source + ": __metadata__ is " + describe(v) +
                ", expected an object of string values");
  }
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) {
      throw Error(source + ": __metadata__ " + quote_name(key) + " is " + describe(value) +
                  ", expected a string");
    }
    metadata.emplace(key, value.get<std::string>());
  }
  return metadata;
}

// Empty tensors occupy no bytes and so overlap nothing.
void check_overlaps(std::vector<Entry> entries, const std::string& source) {
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const Entry& e) { return e.begin == e.end; }),
                entries.end());
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries.size(); ++i) {
    const Entry& a = entries[i - 1];
    const Entry& b = entries[i];
    if (b.begin < a.end) {
      throw Error(source + ": tensors " + quote_name(a.name) + " data_offsets [" +
                  std::to_string(a.begin) + ", " + std::to_string(a.end) + "] and " +
                  quote_name(b.name) + " data_offsets [" + std::to_string(b.begin) + ", " +
                  std::to_string(b.end) + "] overlap");
    }
  }
}

Header parse_header(const uint8_t* text, size_t size, uint64_t data_size,
                    const std::string& source) {
  const json j = parse_json(text, size, source);
  Header header;
  for (const auto& [name, value] : j.items()) {
    if (name == "__metadata__") {
      header.metadata = parse_metadata(value, source);
    } else {
      header.entries.push_back(parse_entry(name, value, data_size, source));
    }
  }
  check_overlaps(header.entries, source);
  return header;
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

// The header length from the first 8 bytes, checked against the file's size.
uint64_t header_length(const uint8_t* prefix, uint64_t file_size, const std::string& source) {
  if (file_size < kPrefixBytes) {
    throw Error(source + ": file has " + std::to_string(file_size) +
                " bytes, too short for the 8-byte header length");
  }
  const uint64_t n = read_u64_le(prefix);
  if (n > kMaxSafetensorsHeaderBytes) {
    throw Error(source + ": header length " + std::to_string(n) + " exceeds the limit of " +
                std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  if (n > file_size - kPrefixBytes) {
    throw Error(source + ": header length " + std::to_string(n) + " runs past the end of the " +
                std::to_string(file_size) + "-byte file");
  }
  return n;
}

// A tensor over `data` (the data section). With an `owner` holding that memory
// and an aligned start, the tensor shares the memory; otherwise it is a copy.
at::Tensor make_tensor(const Entry& e, const uint8_t* data, const at::Tensor& owner) {
  const auto options = at::TensorOptions().dtype(e.dtype).device(at::kCPU);
  const uint8_t* start = data + e.begin;
  const bool aligned = reinterpret_cast<uintptr_t>(start) % c10::elementSize(e.dtype) == 0;
  if (owner.defined() && aligned && e.end > e.begin) {
    return at::from_blob(
        const_cast<uint8_t*>(start), e.shape, [owner](void*) {}, options);
  }
  at::Tensor t = at::empty(e.shape, options);
  if (e.end > e.begin) std::memcpy(t.data_ptr(), start, e.end - e.begin);
  return t;
}

SafetensorsContents build(const Header& header, const uint8_t* data, const at::Tensor& owner,
                          const std::string& source) {
  SafetensorsContents out;
  out.metadata = header.metadata;
  for (const Entry& e : header.entries) {
    try {
      out.tensors.emplace(e.name, make_tensor(e, data, owner));
    } catch (const c10::Error& err) {
      throw Error(source + ": tensor " + quote_name(e.name) + " shape " + list_str(e.shape) +
                  " of " + e.dtype_name + " cannot be made (" + err.what_without_backtrace() + ")");
    } catch (const std::bad_alloc&) {
      throw Error(source + ": tensor " + quote_name(e.name) + " of " +
                  std::to_string(e.end - e.begin) + " bytes does not fit in memory");
    }
  }
  return out;
}

std::string os_error() {
  return std::strerror(errno);
}

// Reads exactly `size` bytes or throws.
void read_exactly(std::ifstream& in, void* dst, uint64_t size, const std::string& path) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) {
    throw Error(path + ": read " + std::to_string(in.gcount()) + " of " + std::to_string(size) +
                " bytes (" + os_error() + ")");
  }
}

// ---- writing -------------------------------------------------------------------------------

struct Layout {
  std::string header;                                    // JSON, padded with spaces
  std::vector<std::pair<std::string, at::Tensor>> data;  // CPU, contiguous, in file order
  uint64_t data_bytes = 0;
};

Layout plan_layout(const TensorMap& tensors, const StringMap& metadata, const std::string& where) {
  Layout layout;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") throw Error(where + ": a tensor cannot be named __metadata__");
    if (!tensor.defined()) throw Error(where + ": tensor " + quote_name(name) + " is undefined");
    if (!is_supported(tensor.scalar_type())) {
      throw Error(where + ": tensor " + quote_name(name) + " has dtype " +
                  c10::toString(tensor.scalar_type()) +
                  ", which safetensors files here cannot hold (supported: " + supported_dtypes() +
                  ")");
    }
    layout.data.emplace_back(name, tensor.detach().to(at::kCPU).contiguous());
  }
  // Falling dtype rank (so falling element size), then name: every tensor
  // starts aligned to its element size, and the bytes match the official writer.
  std::sort(layout.data.begin(), layout.data.end(), [](const auto& a, const auto& b) {
    const int ra = dtype_rank(a.second.scalar_type()), rb = dtype_rank(b.second.scalar_type());
    return ra != rb ? ra > rb : a.first < b.first;
  });
  // The official key order: __metadata__, then the tensors in data order.
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!metadata.empty()) j["__metadata__"] = metadata;
  for (const auto& [name, t] : layout.data) {
    const uint64_t bytes = t.numel() * t.element_size();
    auto& entry = j[name];
    entry["dtype"] = safetensors_dtype_name(t.scalar_type());
    entry["shape"] = t.sizes().vec();
    entry["data_offsets"] = {layout.data_bytes, layout.data_bytes + bytes};
    layout.data_bytes += bytes;
  }
  try {
    layout.header = j.dump();  // compact, like serde_json
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": a tensor name or metadata string is not valid UTF-8 (" + e.what() + ")");
  }
  layout.header.append((kHeaderAlign - layout.header.size() % kHeaderAlign) % kHeaderAlign, ' ');
  return layout;
}

// Calls sink(pointer, bytes) for each piece of the file in order.
template <typename Sink>
void emit(const Layout& layout, Sink&& sink) {
  uint8_t prefix[kPrefixBytes];
  uint64_t n = layout.header.size();
  for (size_t i = 0; i < kPrefixBytes; ++i, n >>= 8)
    prefix[i] = static_cast<uint8_t>(n & 0xff);
  sink(prefix, kPrefixBytes);
  sink(reinterpret_cast<const uint8_t*>(layout.header.data()), layout.header.size());
  for (const auto& [name, t] : layout.data) {
    sink(static_cast<const uint8_t*>(t.data_ptr()), t.numel() * t.element_size());
  }
}

}  // namespace

at::ScalarType safetensors_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.dtype;
  }
  throw Error("safetensors: unknown dtype " + quote_name(name) +
              " (supported: " + supported_dtypes() + ")");
}

std::string safetensors_dtype_name(at::ScalarType dtype) {
  for (const auto& d : kDtypes) {
    if (dtype == d.dtype) return d.name;
  }
  throw Error(std::string("safetensors: dtype ") + c10::toString(dtype) +
              " cannot be stored (supported: " + supported_dtypes() + ")");
}

SafetensorsContents parse_safetensors(const uint8_t* data, size_t size,
                                      const std::string& source_name) {
  const uint64_t n = header_length(data, size, source_name);
  const uint8_t* text = data + kPrefixBytes;
  const uint64_t data_size = size - kPrefixBytes - n;
  const Header header = parse_header(text, n, data_size, source_name);
  return build(header, text + n, /*owner=*/at::Tensor(), source_name);
}

// Checks every number in the header before touching a byte of data, then reads the
// whole data section with one read into one aligned buffer.
SafetensorsContents read_safetensors(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw Error(path + ": no such file");
  if (fs::is_directory(status)) throw Error(path + ": is a folder, expected a .safetensors file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + os_error() + ")");
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) throw Error(path + ": cannot determine its size");
  const auto file_size = static_cast<uint64_t>(end);
  in.seekg(0);

  uint8_t prefix[kPrefixBytes] = {};
  read_exactly(in, prefix, std::min<uint64_t>(file_size, kPrefixBytes), path);
  const uint64_t n = header_length(prefix, file_size, path);
  std::string text(n, '\0');
  read_exactly(in, text.data(), n, path);
  const uint64_t data_size = file_size - kPrefixBytes - n;
  const Header header =
      parse_header(reinterpret_cast<const uint8_t*>(text.data()), n, data_size, path);

  // The file mapped, the tensors viewing it (mapped_file.hpp); where it cannot
  // be mapped, one read of the whole data section into a buffer they share.
  if (const at::Tensor mapped = map_file(path, file_size); mapped.defined())
    return build(header, mapped.data_ptr<uint8_t>() + kPrefixBytes + n, mapped, path);
  at::Tensor buffer;
  try {
    buffer = at::empty({static_cast<int64_t>(data_size)}, at::kByte);
  } catch (const std::exception&) {
    throw Error(path + ": its " + std::to_string(data_size) +
                "-byte data section does not fit in memory");
  }
  read_exactly(in, buffer.data_ptr(), data_size, path);
  return build(header, buffer.data_ptr<uint8_t>(), buffer, path);
}

// As the official writer: tensors by falling element size, then by name, so each
// starts aligned to its element size; the JSON lists "__metadata__" (sorted keys)
// and then the tensors in that order, padded with spaces to a multiple of 8 bytes.
std::vector<uint8_t> serialize_safetensors(const TensorMap& tensors, const StringMap& metadata) {
  const Layout layout = plan_layout(tensors, metadata, "safetensors");
  std::vector<uint8_t> bytes;
  bytes.reserve(kPrefixBytes + layout.header.size() + layout.data_bytes);
  emit(layout, [&](const uint8_t* p, uint64_t n) { bytes.insert(bytes.end(), p, p + n); });
  return bytes;
}

void write_safetensors(const std::string& path, const TensorMap& tensors,
                       const StringMap& metadata) {
  const Layout layout = plan_layout(tensors, metadata, path);
  write_atomically(path, [&](const std::string& temp) {
    CheckedFile file(temp);
    emit(layout, [&](const uint8_t* p, uint64_t n) { file.write(p, n); });
    file.close();
  });
}

TensorMap to_dtype(const TensorMap& tensors, at::ScalarType dtype) {
  TensorMap out;
  for (const auto& [name, t] : tensors)
    out.emplace(name, t.to(dtype));
  return out;
}

}  // namespace vit
