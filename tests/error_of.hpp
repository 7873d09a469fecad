#pragma once
// The message of the vit::Error that `f` throws, or "(no error)", so a test can
// assert the exact text a user would see.
#include <functional>
#include <string>

#include <gtest/gtest.h>

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

// Success where `f` throws a vit::Error whose message contains `fragment`;
// else a failure that shows the message (or that none came).
inline ::testing::AssertionResult throws_error_containing(const std::function<void()>& f,
                                                          const std::string& fragment) {
  const std::string message = error_of(f);
  if (message.find(fragment) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected a vit::Error containing '" << fragment << "', got: " << message;
}

}  // namespace vit::testing
