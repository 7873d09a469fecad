#pragma once
// Mixed precision: an autocast scope for bf16/fp16 and the loss scaling that
// fp16 needs (LibTorch's C++ API has no GradScaler).
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

// Whether a training step runs in bf16 from end to end, with no autocast
// (train.bf16_activations; train/weight_mirror.hpp): under bf16 on CUDA,
// where it is asked for. Everywhere else the step runs under autocast.
bool runs_bf16_end_to_end(Precision precision, c10::Device device, bool bf16_activations);

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

// Dynamic loss scaling for fp16: scale the loss up, unscale the gradients,
// skip the step and halve the scale on overflow, double it after 2000 good
// steps in a row (torch.amp.GradScaler's defaults). The scale and the overflow
// flag live on the training device and nothing here waits for the GPU, so the
// step can run inside a CUDA graph. Disabled (scale 1, never skips) for fp32
// and bf16.
class LossScaler {
 public:
  LossScaler(bool enabled, c10::Device device);
  bool enabled() const { return enabled_; }
  // loss x scale (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss) const;
  // Divides the gradients (the optimizer's flat vector) by the scale, and sets
  // found_inf() to 1 when any of them is not finite, else 0.
  void unscale(at::Tensor& gradients);
  // float (1) on the device: the last unscale's overflow flag; undefined when
  // disabled. The optimizer skips its step where it holds 1.
  const at::Tensor& found_inf() const { return found_inf_; }
  // Halves the scale after an overflow, doubles it after 2000 good steps.
  void update();
  double value() const;  // the current scale (waits for the device)

 private:
  bool enabled_;
  at::Tensor scale_;           // float (1)
  at::Tensor growth_tracker_;  // int32 (1): good steps since the last change
  at::Tensor found_inf_;       // float (1)
};

}  // namespace vit
