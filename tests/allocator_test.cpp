#include "vit/allocator.hpp"

#include <malloc.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "under_asan.hpp"

namespace vit {
namespace {

// Activation-sized tensors come from the heap, which keeps their memory when
// they are freed; larger ones are still mapped one by one.
TEST(Allocator, TensorsUpTo32MiBReuseTheHeap) {
#ifdef VIT_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer replaces glibc's malloc, whose settings this test checks";
#endif
  reuse_freed_tensor_memory();
  const size_t mapped_before = mallinfo2().hblkhd;
  size_t heap_with_tensor = 0;
  {
    const auto activations = torch::empty({4 << 20}, torch::kFloat32);  // 16 MiB
    EXPECT_EQ(mallinfo2().hblkhd, mapped_before);
    heap_with_tensor = mallinfo2().arena;
  }
  EXPECT_EQ(mallinfo2().arena, heap_with_tensor);               // not trimmed after the free
  const auto huge = torch::empty({16 << 20}, torch::kFloat32);  // 64 MiB
  EXPECT_GE(mallinfo2().hblkhd, mapped_before + (64u << 20));
}

}  // namespace
}  // namespace vit
