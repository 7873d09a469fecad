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

// The first non-blank line of a message from a library we call: LibTorch's
// c10::Error goes on with a C++ backtrace, and its TorchScript importer's
// errors (torch::jit::ErrorReport) start with a blank line.
inline std::string first_line_of(const std::exception& e) {
  const std::string text = e.what();
  const auto begin = text.find_first_not_of(" \n");
  if (begin == std::string::npos) return "no message";
  return text.substr(begin, text.find('\n', begin) - begin);
}

}  // namespace vit
