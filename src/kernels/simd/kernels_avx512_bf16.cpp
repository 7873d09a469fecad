// The own kernels compiled for AVX-512 with AVX512_BF16, 16 lanes: the bodies of
// kernels/simd/*.inc in the lane functions of avx512.hpp's avx512_bf16 set,
// each function carrying its target attribute. The set's narrowing store to bf16 is
// one vcvtneps2bf16 instead of eight integer instructions (AMD Zen 4 and 5, Intel's
// Cooper Lake and every Xeon with AMX).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "avx512.hpp"
#include "kernels.hpp"

#define VIT_SIMD VIT_AVX512_BF16

namespace vit::detail::avx512_bf16 {

#include "kernel_bodies.inc"

}  // namespace vit::detail::avx512_bf16
