#pragma once
// The entry points that the fuzz targets (fuzz/fuzz_*.cpp) and the regression
// test (tests/fuzz_regressions_test.cpp) feed with untrusted bytes. Each one
// hands the bytes to a reader through the same function that `vit` calls and
// either returns or throws vit::Error; anything else (a crash, a sanitizer
// report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vit::fuzz {

using EntryPoint = void (*)(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // fuzz/fuzz_<name>.cpp, tests/fuzz_regressions/<name>/
  EntryPoint run;
  const char* what;  // one line for `scripts/fuzz.sh --list`
};

// Every target, in a fixed order.
const std::vector<Target>& targets();

// The entry point called `name`; throws vit::Error for an unknown name.
EntryPoint entry_point(const std::string& name);

}  // namespace vit::fuzz
