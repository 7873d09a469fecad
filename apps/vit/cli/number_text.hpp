#pragma once
// Numbers as the commands print them for people.
#include <cstdint>
#include <string>

namespace vit::cli {

// 86540008 -> "86,540,008"
inline std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<size_t>(i), 1, ',');
  return n < 0 ? "-" + digits : digits;
}

}  // namespace vit::cli
