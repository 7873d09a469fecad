#include "../../src/kernels/simd/kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "vit/cpu_isa.hpp"

namespace vit::detail {
namespace {

uint16_t bits_of(c10::BFloat16 v) {
  return v.x;
}

float float_of_bits(uint32_t bits) {
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Values whose narrowing to bf16 is easy to get wrong: exact ties (half a
// bf16 step above a bf16 value, with an even and with an odd last bit), the
// floats just beside them, values that round up into the exponent or overflow
// to infinity, both signs, and a row's length that leaves a partial vector.
std::vector<float> narrowing_cases() {
  std::vector<float> v;
  for (const uint32_t bf16 : {0x3F80u, 0x3F81u, 0x4049u, 0x7F7Fu, 0x0080u, 0x3F7Fu}) {
    const uint32_t bits = bf16 << 16;
    for (const uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      for (const uint32_t sign : {0u, 0x80000000u})
        v.push_back(float_of_bits(sign | bits | low));
  }
  for (int i = 0; i < 37; ++i)
    v.push_back(std::ldexp(0.7f + 0.013f * i, i - 18));
  v.push_back(std::numeric_limits<float>::infinity());
  v.push_back(0.0f);
  v.push_back(-0.0f);
  return v;
}

// Narrows dz to bf16 through biased_residual_backward, a pure narrowing:
// dy = bf16(dz), one row.
template <typename Narrow>
std::vector<c10::BFloat16> narrowed(const std::vector<float>& dz, Narrow narrow) {
  std::vector<c10::BFloat16> dy(dz.size());
  std::vector<float> dbias(dz.size(), 0.0f);
  narrow(dz.data(), dy.data(), dbias.data(), 1, static_cast<int64_t>(dz.size()));
  return dy;
}

bool has_avx512_bf16() {
  return detected_cpu_isa() >= CpuIsa::kAvx512Bf16;
}

TEST(SimdSets, TheLevelIsTheBestThatTheCappedIsaAllows) {
  const CpuIsa isa = cpu_isa();
  const SimdLevel expected = isa >= CpuIsa::kAvx512Bf16 ? SimdLevel::kAvx512Bf16
                             : isa >= CpuIsa::kAvx512   ? SimdLevel::kAvx512
                             : isa >= CpuIsa::kAvx2     ? SimdLevel::kAvx2
                                                        : SimdLevel::kNone;
  EXPECT_EQ(static_cast<int>(simd_level()), static_cast<int>(expected))
      << "VIT_CPU_ISA allows " << cpu_isa_name(isa);
}

// Every set rounds to the nearest bf16, ties to even, as c10::BFloat16 does.
TEST(SimdSets, EverySetNarrowsToBf16AsC10Does) {
  const std::vector<float> dz = narrowing_cases();
  std::vector<std::pair<std::string, std::vector<c10::BFloat16>>> sets;
  const CpuIsa detected = detected_cpu_isa();
  if (detected >= CpuIsa::kAvx2)
    sets.emplace_back("avx2", narrowed(dz, avx2::biased_residual_backward));
  if (detected >= CpuIsa::kAvx512)
    sets.emplace_back("avx512", narrowed(dz, avx512::biased_residual_backward));
  if (has_avx512_bf16())
    sets.emplace_back("avx512_bf16", narrowed(dz, avx512_bf16::biased_residual_backward));
  if (sets.empty()) GTEST_SKIP() << "no vector set of vit's own runs on this CPU";
  for (const auto& [name, dy] : sets)
    for (size_t i = 0; i < dz.size(); ++i)
      ASSERT_EQ(bits_of(dy[i]), bits_of(c10::BFloat16(dz[i])))
          << name << ", value " << i << " = " << dz[i];
}

// Subnormal floats and NaNs, which vcvtneps2bf16 alone would flush to zero
// or keep with their payload, get c10's bits in every set: avx512_bf16 hands
// their vectors to the integer narrowing. Beside ordinary values in the same
// vector, which must still round.
TEST(SimdSets, SubnormalsAndNanGetC10sBitsInEverySet) {
  const float tiny = float_of_bits(0x00012345u);  // a subnormal, not a bf16 value
  const std::vector<float> dz = {
      tiny, -tiny, std::nanf(""), -std::nanf(""), 1.0f, float_of_bits(0x3F808000u), 3.0f};
  std::vector<std::vector<c10::BFloat16>> sets;
  const CpuIsa detected = detected_cpu_isa();
  if (detected >= CpuIsa::kAvx2) sets.push_back(narrowed(dz, avx2::biased_residual_backward));
  if (detected >= CpuIsa::kAvx512) sets.push_back(narrowed(dz, avx512::biased_residual_backward));
  if (has_avx512_bf16()) sets.push_back(narrowed(dz, avx512_bf16::biased_residual_backward));
  if (sets.empty()) GTEST_SKIP() << "no vector set of vit's own runs on this CPU";
  const std::vector<uint16_t> expected = {0x0001, 0x8001, 0x7FC0, 0x7FC0, 0x3F80, 0x3F80, 0x4040};
  for (size_t s = 0; s < sets.size(); ++s)
    for (size_t i = 0; i < dz.size(); ++i)
      EXPECT_EQ(bits_of(sets[s][i]), expected[i]) << "set " << s << ", value " << i;
}

}  // namespace
}  // namespace vit::detail
