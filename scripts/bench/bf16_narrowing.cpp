// The own kernels' bf16 outputs narrowed by integer instructions (the
// avx512 set) against one vcvtneps2bf16 (the avx512_bf16 set), on the CPU
// benchmark job's shapes, one thread, the two sets interleaved: the biased
// GELU forward (fc1's 8,320 x 768, output and slope in bf16), the joined
// residual and LayerNorm forward (8,320 x 192, the norm in bf16), and the
// residual's backward (8,320 x 192, the gradient narrowed to bf16). Prints
// the median of 7 rounds of each, in ms. Needs a CPU with AVX512_BF16.
// Not part of the build (from the repository's root, after scripts/build.sh):
//   g++ -O2 -std=c++17 -ffp-contract=off -Isrc/kernels/simd -Iscripts/bench
//   -I/usr/include/torch/csrc/api/include \
//     scripts/bench/bf16_narrowing.cpp src/kernels/simd/kernels_avx512.cpp \
//     src/kernels/simd/kernels_avx512_bf16.cpp -lc10 -o /tmp/bf16_narrowing
//   /tmp/bf16_narrowing
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels.hpp"
#include "mean_ms.hpp"

namespace {

using Bf16 = c10::BFloat16;
namespace sets = vit::detail;

constexpr int64_t kRows = 8320;

std::vector<float> random_floats(size_t n, std::mt19937& gen) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v)
    x = normal(gen);
  return v;
}

std::vector<Bf16> to_bf16(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median over rounds of mean_ms, the two calls interleaved round by round.
template <class A, class B>
void compare(const char* name, A integer_narrowing, B hardware_narrowing) {
  std::vector<double> a, b;
  for (int round = 0; round < 7; ++round) {
    a.push_back(mean_ms(integer_narrowing, 10, 2));
    b.push_back(mean_ms(hardware_narrowing, 10, 2));
  }
  std::printf("%-28s avx512 %7.3f ms   avx512_bf16 %7.3f ms   ratio %.2f\n", name, median(a),
              median(b), median(a) / median(b));
}

}  // namespace

int main() {
  std::mt19937 gen(0);
  const int64_t mlp = 768, dim = 192;
  const auto h = to_bf16(random_floats(kRows * mlp, gen));
  const auto bias = random_floats(mlp, gen);
  std::vector<Bf16> y(kRows * mlp), slope(kRows * mlp);
  compare(
      "gelu_biased_forward",
      [&] {
        sets::avx512::gelu_biased_forward(h.data(), bias.data(), y.data(), slope.data(), kRows,
                                          mlp);
      },
      [&] {
        sets::avx512_bf16::gelu_biased_forward(h.data(), bias.data(), y.data(), slope.data(), kRows,
                                               mlp);
      });

  const auto x = random_floats(kRows * dim, gen), b = random_floats(dim, gen);
  const auto product = to_bf16(random_floats(kRows * dim, gen));
  const std::vector<float> gamma(dim, 1.0f), beta(dim, 0.0f);
  std::vector<float> z(kRows * dim), mean(kRows), rstd(kRows);
  std::vector<Bf16> n(kRows * dim);
  compare(
      "residual_norm_forward",
      [&] {
        sets::avx512::residual_norm_forward(x.data(), product.data(), b.data(), gamma.data(),
                                            beta.data(), z.data(), n.data(), mean.data(),
                                            rstd.data(), kRows, dim, 1e-6f);
      },
      [&] {
        sets::avx512_bf16::residual_norm_forward(x.data(), product.data(), b.data(), gamma.data(),
                                                 beta.data(), z.data(), n.data(), mean.data(),
                                                 rstd.data(), kRows, dim, 1e-6f);
      });

  std::vector<Bf16> dy(kRows * dim);
  std::vector<float> dbias(dim);
  compare(
      "biased_residual_backward",
      [&] {
        sets::avx512::biased_residual_backward(x.data(), dy.data(), dbias.data(), kRows, dim);
      },
      [&] {
        sets::avx512_bf16::biased_residual_backward(x.data(), dy.data(), dbias.data(), kRows, dim);
      });
  return 0;
}
