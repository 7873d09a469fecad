#pragma once
// The one exception type of the library. Messages say where, what came in and
// what was expected; only apps/vit/main.cpp catches and prints them.
#include <stdexcept>
#include <string>

namespace vit {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace vit
