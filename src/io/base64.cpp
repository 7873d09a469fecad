#include "vit/io/base64.hpp"

namespace vit::io {

std::string base64_encode(const uint8_t* data, size_t size) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    // Three bytes (zero-padded at the end) -> four 6-bit digits.
    const uint32_t chunk = uint32_t{data[i]} << 16 |
                           (i + 1 < size ? uint32_t{data[i + 1]} << 8 : 0) |
                           (i + 2 < size ? uint32_t{data[i + 2]} : 0);
    out += kAlphabet[chunk >> 18 & 63];
    out += kAlphabet[chunk >> 12 & 63];
    out += i + 1 < size ? kAlphabet[chunk >> 6 & 63] : '=';
    out += i + 2 < size ? kAlphabet[chunk & 63] : '=';
  }
  return out;
}

std::string base64_encode(const std::vector<uint8_t>& bytes) {
  return base64_encode(bytes.data(), bytes.size());
}

}  // namespace vit::io
