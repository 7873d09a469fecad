#pragma once
// Private to src/io: bounds-checked reads of an untrusted file header. Every
// read past the end gives nullopt, never a byte outside the buffer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace vit::io::detail {

class HeaderBytes {
 public:
  HeaderBytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t size() const { return size_; }
  std::optional<uint8_t> u8(size_t at) const {
    if (at >= size_) return std::nullopt;
    return data_[at];
  }
  // An unsigned integer of `count` bytes (1 to 4) from `at`, in either order.
  std::optional<uint32_t> uint(size_t at, size_t count, bool big_endian) const {
    if (at > size_ || size_ - at < count) return std::nullopt;
    uint32_t value = 0;
    for (size_t i = 0; i < count; ++i)
      value = value << 8 | data_[at + (big_endian ? i : count - 1 - i)];
    return value;
  }
  std::optional<uint16_t> u16(size_t at, bool big_endian = true) const {
    const auto v = uint(at, 2, big_endian);
    if (!v) return std::nullopt;
    return static_cast<uint16_t>(*v);
  }
  std::optional<uint32_t> u32(size_t at, bool big_endian) const { return uint(at, 4, big_endian); }
  // The bytes from `at` on, at most `length` of them (none past the end).
  HeaderBytes from(size_t at, size_t length) const {
    if (at > size_) return {data_, 0};
    return {data_ + at, std::min(length, size_ - at)};
  }
  // Whether the bytes at `at` are `text` (`length` bytes; it may hold zeros).
  bool matches(size_t at, const char* text, size_t length) const {
    return at <= size_ && size_ - at >= length && std::memcmp(data_ + at, text, length) == 0;
  }
  bool starts_with(const char* text, size_t length) const { return matches(0, text, length); }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace vit::io::detail
