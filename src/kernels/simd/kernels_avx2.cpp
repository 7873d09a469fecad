// The own kernels compiled for AVX2 and FMA, 8 lanes: the bodies of
// kernels/simd/*.inc in the lane functions of avx2.hpp, each function carrying
// its target attribute.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "avx2.hpp"
#include "kernels.hpp"

#define VIT_SIMD VIT_AVX2

namespace vit::detail::avx2 {

#include "kernel_bodies.inc"

}  // namespace vit::detail::avx2
