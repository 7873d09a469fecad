#include "vit/infer/precision.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"

namespace vit {
namespace {

using testing::error_of;

PrecisionHardware cpu(CpuIsa isa) {
  PrecisionHardware h;
  h.cpu = isa;
  return h;
}

PrecisionHardware gpu(int major, int minor) {
  PrecisionHardware h = cpu(CpuIsa::kAvx2);
  h.cuda = true;
  h.cuda_major = major;
  h.cuda_minor = minor;
  return h;
}

TEST(ChoosePrecision, AutoIsFp32OnCpusWithoutBf16Instructions) {
  for (const CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    const PrecisionChoice c = choose_precision(Precision::kAuto, cpu(isa));
    EXPECT_EQ(c.precision, Precision::kFp32);
    EXPECT_EQ(c.description, std::string("precision auto: fp32 (this CPU has no bf16 "
                                         "instructions: ") +
                                 cpu_isa_name(isa) + ")");
    EXPECT_FALSE(c.warning);
  }
}

// Under VIT_CPU_ISA's cap the log says so: the CPU itself may well have more.
TEST(ChoosePrecision, ACappedIsaIsNamedAsTheCap) {
  PrecisionHardware h = cpu(CpuIsa::kAvx2);
  h.cpu_capped = true;
  EXPECT_EQ(choose_precision(Precision::kAuto, h).description,
            "precision auto: fp32 (this CPU has no bf16 instructions: avx2 as VIT_CPU_ISA allows)");
  EXPECT_EQ(precision_hardware(torch::kCPU).cpu_capped, cpu_isa() < detected_cpu_isa());
}

TEST(ChoosePrecision, AutoIsBf16WhereTheCpuComputesIt) {
  EXPECT_EQ(choose_precision(Precision::kAuto, cpu(CpuIsa::kAvx512Bf16)).description,
            "precision auto: bf16 (this CPU computes bf16: avx512_bf16)");
  const PrecisionChoice amx = choose_precision(Precision::kAuto, cpu(CpuIsa::kAmx));
  EXPECT_EQ(amx.precision, Precision::kBf16);
  EXPECT_EQ(amx.description, "precision auto: bf16 (this CPU computes bf16: amx)");
}

TEST(ChoosePrecision, AutoOnCudaIsBf16FromAmpereAndFp16Before) {
  const PrecisionChoice hopper = choose_precision(Precision::kAuto, gpu(9, 0));
  EXPECT_EQ(hopper.precision, Precision::kBf16);
  EXPECT_EQ(hopper.description, "precision auto: bf16 (CUDA compute capability 9.0)");
  EXPECT_EQ(choose_precision(Precision::kAuto, gpu(8, 0)).precision, Precision::kBf16);
  const PrecisionChoice turing = choose_precision(Precision::kAuto, gpu(7, 5));
  EXPECT_EQ(turing.precision, Precision::kFp16);
  EXPECT_EQ(turing.description,
            "precision auto: fp16 with loss scaling (CUDA compute capability 7.5 has no bf16)");
}

TEST(ChoosePrecision, AnExplicitBf16OnACpuThatEmulatesItRunsWithAWarning) {
  const PrecisionChoice c = choose_precision(Precision::kBf16, cpu(CpuIsa::kAvx2));
  EXPECT_EQ(c.precision, Precision::kBf16);
  EXPECT_EQ(c.description, "precision bf16");
  ASSERT_TRUE(c.warning);
  EXPECT_EQ(*c.warning,
            "precision bf16: this CPU has no bf16 instructions (avx2), so LibTorch emulates them, "
            "far slower than fp32; use precision fp32 or auto (auto picks fp32 here)");
  EXPECT_FALSE(choose_precision(Precision::kBf16, cpu(CpuIsa::kAmx)).warning);
  EXPECT_FALSE(choose_precision(Precision::kBf16, gpu(7, 5)).warning);
  EXPECT_FALSE(choose_precision(Precision::kFp32, cpu(CpuIsa::kAvx2)).warning);
}

TEST(ChoosePrecision, ExplicitChoicesStayAndBadOnesAreErrors) {
  EXPECT_EQ(choose_precision(Precision::kFp32, gpu(9, 0)).precision, Precision::kFp32);
  EXPECT_EQ(choose_precision(Precision::kFp16, gpu(9, 0)).precision, Precision::kFp16);
  EXPECT_EQ(choose_precision(Precision::kBf16, cpu(CpuIsa::kAvx512Bf16)).description,
            "precision bf16");
  EXPECT_EQ(error_of([] { choose_precision(Precision::kFp16, cpu(CpuIsa::kAmx)); }),
            "train.precision fp16 needs a CUDA device (on CPU use bf16)");
  EXPECT_EQ(error_of([] { enum_named<Precision>("half", "train.precision"); }),
            "invalid config: train.precision is 'half', expected auto | fp32 | bf16 | fp16");
}

TEST(ChoosePrecision, OnThisCpuAutoFollowsTheIsaVitMayUse) {
  EXPECT_EQ(precision_hardware(torch::kCPU).cpu, cpu_isa());
  EXPECT_FALSE(precision_hardware(torch::kCPU).cuda);
  EXPECT_EQ(choose_precision(Precision::kAuto, torch::kCPU).precision,
            cpu_computes_bf16(cpu_isa()) ? Precision::kBf16 : Precision::kFp32);
}

}  // namespace
}  // namespace vit
