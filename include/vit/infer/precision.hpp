#pragma once
// Mixed precision for training and inference alike: which precision a step
// runs (train.precision auto), and an autocast scope for bf16/fp16. The loss
// scaling that fp16 training needs is train/loss_scaler.hpp.
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "vit/config.hpp"
#include "vit/cpu_isa.hpp"

namespace vit {

// The low-precision type of a precision: bf16 or fp16, none for fp32.
// Throws vit::Error for auto (resolve it with choose_precision first).
std::optional<at::ScalarType> autocast_dtype(Precision precision);

// What decides train.precision auto: the device and its arithmetic.
struct PrecisionHardware {
  bool cuda = false;
  int cuda_major = 0, cuda_minor = 0;  // compute capability, on CUDA
  CpuIsa cpu = CpuIsa::kBaseline;      // cpu_isa(), on the CPU
  bool cpu_capped = false;             // VIT_CPU_ISA keeps cpu below what the CPU has
};
PrecisionHardware precision_hardware(c10::Device device);

// The precision a step runs, and why.
struct PrecisionChoice {
  Precision precision = Precision::kFp32;  // fp32, bf16 or fp16: never auto
  // One line for the log: "precision auto: fp32 (this CPU has no bf16
  // instructions: avx2)", or "precision bf16" when it was asked for.
  std::string description;
  // Set when bf16 was asked for on a CPU without bf16 instructions, where
  // LibTorch emulates it: the warning to log once.
  std::optional<std::string> warning;
};

// auto picks bf16 on CPUs that compute it (AVX512_BF16, AMX) and on CUDA
// devices of compute capability 8.0 and up, fp16 (with loss scaling) on
// older CUDA devices, fp32 on other CPUs. fp32, bf16 and fp16 stay as they
// are; fp16 off CUDA is a vit::Error.
PrecisionChoice choose_precision(Precision requested, const PrecisionHardware& hardware);
PrecisionChoice choose_precision(Precision requested, c10::Device device);

// The precision a model trained in `trained` precision is evaluated in on
// `device`: its training precision, so a bf16 model is tested, evaluated and
// asked for predictions in bf16, as it was validated; auto is what auto
// picks on `device`. fp16 needs CUDA; off CUDA an fp16 model runs in fp32.
Precision evaluation_precision(Precision trained, c10::Device device);

// Turns autocast on for the device type for the scope's lifetime.
// fp32 does nothing; bf16 works on CPU and CUDA; fp16 needs CUDA.
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
