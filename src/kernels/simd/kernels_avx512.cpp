// The own kernels compiled for AVX-512 (F, BW, VL), 16 lanes: the bodies of
// kernels/simd/*.inc in the lane functions of avx512.hpp, each function carrying
// its target attribute.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "avx512.hpp"
#include "kernels.hpp"

#define VIT_SIMD VIT_AVX512

namespace vit::detail::avx512 {

#include "kernel_bodies.inc"

}  // namespace vit::detail::avx512
