#pragma once
// Private to src/data: the layout of the files that ranks map (file_list,
// shared_listing): int64 fields in native byte order, and byte runs padded to 8
// bytes, so that every int64 array after them stays aligned in the mapping.
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>

#include "vit/error.hpp"

namespace vit::data::detail {

inline size_t padded(size_t bytes) {
  return (bytes + 7) / 8 * 8;
}

inline void put_int(std::ostream& out, int64_t value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename Bytes>
void put_padded(std::ostream& out, const Bytes& bytes) {
  for (const auto b : bytes)
    out.put(static_cast<char>(b));
  for (size_t pad = padded(bytes.size()) - bytes.size(); pad > 0; --pad)
    out.put('\0');
}

// A length, then the bytes.
inline void put_text(std::ostream& out, const std::string& text) {
  put_int(out, int64_t(text.size()));
  put_padded(out, text);
}

// Reads them back from [at, end), moving `at`; what runs past `end` or out of its
// range is a vit::Error naming `what` ("a file list").
class PaddedReader {
 public:
  PaddedReader(const char*& at, const char* end, std::string what)
      : at_(at), end_(end), what_(std::move(what)) {}
  int64_t integer(int64_t low, int64_t high, const char* field) {
    int64_t value = 0;
    std::memcpy(&value, take(sizeof value), sizeof value);
    if (value < low || value > high)
      throw Error(what_ + "'s " + field + " is " + std::to_string(value) + ", expected " +
                  std::to_string(low) + ".." + std::to_string(high));
    return value;
  }
  const char* bytes(size_t count) { return take(padded(count)); }
  std::string text(int64_t most, const char* field) {
    const auto size = static_cast<size_t>(integer(0, most, field));
    return std::string(bytes(size), size);
  }
  const char* end() const { return end_; }

 private:
  const char* take(size_t count) {
    if (count > size_t(end_ - at_)) throw Error(what_ + " ends early");
    const char* here = at_;
    at_ += count;
    return here;
  }
  const char*& at_;
  const char* end_;
  std::string what_;
};

}  // namespace vit::data::detail
