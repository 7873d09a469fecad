#pragma once
// Base64 (RFC 4648, standard alphabet, '=' padding), for images embedded in
// HTML as data: URIs.
#include <cstdint>
#include <string>
#include <vector>

namespace vit::io {

std::string base64_encode(const uint8_t* data, size_t size);
std::string base64_encode(const std::vector<uint8_t>& bytes);

}  // namespace vit::io
