#include "../../src/kernels/amx/tiles.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "vit/cpu_isa.hpp"

namespace vit::detail::amx {
namespace {

std::string no_amx_reason() {
  return std::string("no AMX tiles here (VIT_CPU_ISA allows ") + cpu_isa_name(cpu_isa()) + ")";
}

// A (m x k) and B (k x n) with small integers, whose bf16 products and fp32
// sums are exact: B packed in pairs of rows, as tile_product() reads it.
struct Operands {
  int64_t m, n, k;
  std::vector<c10::BFloat16> a, b_pairs;
  std::vector<float> expected;  // m x n
};

Operands small_integers(int64_t m_tiles, int64_t n_tiles, int64_t k_steps) {
  Operands o{m_tiles * 16, n_tiles * 16, k_steps * 32, {}, {}, {}};
  o.a.resize(o.m * o.k);
  o.b_pairs.resize(o.k * o.n);
  o.expected.assign(o.m * o.n, 0.0f);
  const auto a = [&](int64_t i, int64_t p) { return float((i * 3 + p * 5) % 7) - 3; };
  const auto b = [&](int64_t p, int64_t j) { return float((p * 2 + j * 7) % 5) - 2; };
  for (int64_t i = 0; i < o.m; ++i)
    for (int64_t p = 0; p < o.k; ++p)
      o.a[i * o.k + p] = a(i, p);
  for (int64_t p = 0; p < o.k; ++p)
    for (int64_t j = 0; j < o.n; ++j)
      o.b_pairs[(p / 2) * 2 * o.n + 2 * j + p % 2] = b(p, j);
  for (int64_t i = 0; i < o.m; ++i)
    for (int64_t j = 0; j < o.n; ++j)
      for (int64_t p = 0; p < o.k; ++p)
        o.expected[i * o.n + j] += a(i, p) * b(p, j);
  return o;
}

std::vector<float> product(const Operands& o) {
  std::vector<float> c(o.m * o.n, -1.0f);
  tile_product(o.a.data(), o.k, o.b_pairs.data(), o.n, c.data(), o.n, o.m / 16, o.n / 16, o.k / 32);
  return c;
}

TEST(AmxTiles, UsableExactlyWhereTheCpuIsaReachesAmx) {
  EXPECT_EQ(tiles_usable(), cpu_isa() >= CpuIsa::kAmx);
}

// Exact sums of small integers: every block shape of tile_product (2 x 2,
// 2 x 1, 1 x 2 and 1 x 1 tiles) and depths of 1 to 3 steps.
TEST(AmxTiles, ProductIsExactOnSmallIntegers) {
  if (!tiles_usable()) GTEST_SKIP() << no_amx_reason();
  TileScope tiles;
  for (const auto& [m, n, k] :
       {std::tuple{1, 1, 1}, std::tuple{3, 3, 2}, std::tuple{2, 5, 3}, std::tuple{5, 2, 1}}) {
    const auto o = small_integers(m, n, k);
    EXPECT_EQ(product(o), o.expected) << m << " x " << n << " tiles, " << k << " steps";
  }
}

// A scope puts back the configuration the thread had: an inner scope ends,
// and the outer one's tiles still multiply (a release would make the next
// tile instruction fault).
TEST(AmxTiles, AScopePutsBackTheThreadsConfiguration) {
  if (!tiles_usable()) GTEST_SKIP() << no_amx_reason();
  const auto o = small_integers(2, 2, 2);
  TileScope outer;
  { TileScope inner; }
  EXPECT_EQ(product(o), o.expected);
}

}  // namespace
}  // namespace vit::detail::amx
