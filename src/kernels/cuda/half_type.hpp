#pragma once
// The 16-bit element type a kernel of src/kernels/cuda/ reads and writes,
// as the host code names it to the launch functions (no CUDA or LibTorch
// header needed).

namespace vit::cuda {

enum class HalfType { kBFloat16, kFloat16 };

}  // namespace vit::cuda
