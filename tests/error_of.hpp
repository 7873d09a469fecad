#pragma once
// The message of the vit::Error that `f` throws, or "(no error)", so a test can
// assert the exact text a user would see.
#include <functional>
#include <string>

#include "vit/error.hpp"

namespace vit::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace vit::testing
