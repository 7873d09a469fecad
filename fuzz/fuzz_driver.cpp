// The libFuzzer entry of one target, chosen at compile time (VIT_FUZZ_TARGET).
// vit::Error is the expected answer to a bad input; anything else escapes to
// libFuzzer, which reports it as a crash with the input that caused it.
#include <cstddef>
#include <cstdint>

#include "entry_points.hpp"
#include "vit/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const vit::fuzz::EntryPoint run = vit::fuzz::entry_point(VIT_FUZZ_TARGET);
  try {
    run(data, size);
  } catch (const vit::Error& e) {
    if (e.what()[0] == '\0') __builtin_trap();  // an error must say something
  }
  return 0;
}
