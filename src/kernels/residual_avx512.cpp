// The biased residual in AVX-512 intrinsics (see avx512_lanes.hpp for how the
// target attribute keeps them to CPUs that have them).
#include "residual_avx512.hpp"

#include <algorithm>
#include <vector>

#include "avx512_lanes.hpp"

namespace vit::detail {
namespace {

template <typename T>
VIT_AVX512 void forward(const float* x, const T* y, const float* bias, float* z, int64_t rows,
                        int64_t d) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * d;
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 m = lanes_left(d - i);
      const __m512 biased = _mm512_add_ps(load(y + row + i, m), load(bias + i, m));
      store(z + row + i, _mm512_add_ps(load(x + row + i, m), biased), m);
    }
  }
}

}  // namespace

void biased_residual_forward_avx512(const float* x, const float* y, const float* bias, float* z,
                                    int64_t rows, int64_t d) {
  forward(x, y, bias, z, rows, d);
}

void biased_residual_forward_avx512(const float* x, const c10::BFloat16* y, const float* bias,
                                    float* z, int64_t rows, int64_t d) {
  forward(x, y, bias, z, rows, d);
}

// The rows are summed in blocks of kBlockRows, each block's sum then added to
// dbias: a rounding error that grows with the block and the number of blocks,
// not with every row (the job's 8,320 rows, summed one after the other, could
// lose a thousand float steps).
constexpr int64_t kBlockRows = 64;

VIT_AVX512 void biased_residual_backward_avx512(const float* dz, c10::BFloat16* dy, float* dbias,
                                                int64_t rows, int64_t d) {
  std::vector<float> block(static_cast<size_t>(d));
  for (int64_t first = 0; first < rows; first += kBlockRows) {
    std::fill(block.begin(), block.end(), 0.0f);
    const int64_t last = std::min(rows, first + kBlockRows);
    for (int64_t r = first; r < last; ++r) {
      const int64_t row = r * d;
      for (int64_t i = 0; i < d; i += 16) {
        const __mmask16 m = lanes_left(d - i);
        const __m512 g = load(dz + row + i, m);
        store(block.data() + i, _mm512_add_ps(load(block.data() + i, m), g), m);
        if (dy != nullptr) store(dy + row + i, g, m);
      }
    }
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 m = lanes_left(d - i);
      store(dbias + i, _mm512_add_ps(load(dbias + i, m), load(block.data() + i, m)), m);
    }
  }
}

}  // namespace vit::detail
