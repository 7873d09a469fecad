#include "vit/cpu_isa.hpp"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "error_of.hpp"

namespace vit {
namespace {

using testing::error_of;

// GCC's own CPUID table (libgcc), which also checks the operating system's
// register state: an independent reading of the same CPU.
TEST(CpuIsa, DetectionAgreesWithTheCompilersCpuFeatures) {
  const CpuIsa isa = detected_cpu_isa();
  EXPECT_EQ(isa >= CpuIsa::kAvx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      << cpu_isa_name(isa);
  EXPECT_EQ(isa >= CpuIsa::kAvx512, __builtin_cpu_supports("avx512f") &&
                                        __builtin_cpu_supports("avx512bw") &&
                                        __builtin_cpu_supports("avx512vl"))
      << cpu_isa_name(isa);
  EXPECT_EQ(isa >= CpuIsa::kAvx512Bf16, __builtin_cpu_supports("avx512bf16") != 0)
      << cpu_isa_name(isa);
}

TEST(CpuIsa, TheCapLowersButNeverRaises) {
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAmx, std::nullopt), CpuIsa::kAmx);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAmx, "avx512"), CpuIsa::kAvx512);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAvx512Bf16, "avx2"), CpuIsa::kAvx2);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAvx512, "baseline"), CpuIsa::kBaseline);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kAvx2, "avx512"), CpuIsa::kAvx2);
  EXPECT_EQ(capped_cpu_isa(CpuIsa::kBaseline, "avx2"), CpuIsa::kBaseline);
}

TEST(CpuIsa, AnUnknownCapIsAnError) {
  for (const std::string cap : {"AVX2", "sse4", "avx512_bf16", " avx2"})
    EXPECT_EQ(error_of([&] { capped_cpu_isa(CpuIsa::kAvx512, cap); }),
              "VIT_CPU_ISA='" + cap +
                  "': expected avx512, avx2 or baseline (the most of this CPU's vector "
                  "instructions vit may use), or unset for all of them");
}

TEST(CpuIsa, TheProcessWideIsaIsTheDetectedOneUnderTheEnvironmentsCap) {
  const char* cap = std::getenv("VIT_CPU_ISA");
  EXPECT_EQ(cpu_isa(),
            capped_cpu_isa(detected_cpu_isa(),
                           cap && *cap ? std::optional<std::string>(cap) : std::nullopt));
}

TEST(CpuIsa, NamesAreTheOnesSummaryJsonAndVitInfoPrint) {
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kBaseline), "baseline");
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kAvx2), "avx2");
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kAvx512), "avx512");
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kAvx512Bf16), "avx512_bf16");
  EXPECT_STREQ(cpu_isa_name(CpuIsa::kAmx), "amx");
  EXPECT_FALSE(cpu_computes_bf16(CpuIsa::kAvx512));
  EXPECT_TRUE(cpu_computes_bf16(CpuIsa::kAvx512Bf16));
  EXPECT_TRUE(cpu_computes_bf16(CpuIsa::kAmx));
}

}  // namespace
}  // namespace vit
