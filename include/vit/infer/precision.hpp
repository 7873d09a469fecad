#pragma once
// Mixed precision for training and inference: which precision a step runs, and an
// autocast scope for bf16/fp16. fp16's loss scaling is train/loss_scaler.hpp.
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "vit/config.hpp"
#include "vit/cpu_isa.hpp"

namespace vit {

// bf16 or fp16, none for fp32. Throws vit::Error for auto (see choose_precision).
std::optional<at::ScalarType> autocast_dtype(Precision precision);

// What decides train.precision auto.
struct PrecisionHardware {
  bool cuda = false;
  int cuda_major = 0, cuda_minor = 0;  // compute capability, on CUDA
  CpuIsa cpu = CpuIsa::kBaseline;      // cpu_isa(), on the CPU
  bool cpu_capped = false;             // VIT_CPU_ISA keeps cpu below what the CPU has
};
PrecisionHardware precision_hardware(c10::Device device);

struct PrecisionChoice {
  Precision precision = Precision::kFp32;  // fp32, bf16 or fp16: never auto
  // For the log: "precision auto: fp32 (this CPU has no bf16 instructions: avx2)".
  std::string description;
  // To log once: bf16 asked for on a CPU without bf16 instructions (emulated).
  std::optional<std::string> warning;
};

// auto picks bf16 on CPUs that compute it (AVX512_BF16, AMX) and on CUDA devices of
// compute capability 8.0 and up, fp16 on older CUDA devices, fp32 on other CPUs.
// fp16 off CUDA is a vit::Error.
PrecisionChoice choose_precision(Precision requested, const PrecisionHardware& hardware);
PrecisionChoice choose_precision(Precision requested, c10::Device device);

// A model's evaluation precision on `device`: its training one, as it was
// validated (auto: what auto picks on `device`); an fp16 model runs in fp32 off CUDA.
Precision evaluation_precision(Precision trained, c10::Device device);

// Autocast on for the device type for the scope's lifetime; fp32 does nothing,
// fp16 needs CUDA.
class AutocastScope {
 public:
  AutocastScope(Precision precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
};

}  // namespace vit
