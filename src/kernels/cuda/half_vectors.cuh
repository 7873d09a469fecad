#pragma once
// What vit's CUDA kernels share: the 16-bit types (bf16 and fp16) as pairs
// and alone, their conversions to and from fp32 (to nearest even, as
// LibTorch rounds), and eight values in one 16-byte load. Included by the
// .cu files of src/kernels/cuda/ alone.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace vit::cuda {

constexpr int kVector = 8;  // 16-bit values in one 16-byte load

template <typename Pair>
struct Half;
template <>
struct Half<__nv_bfloat162> {
  using Scalar = __nv_bfloat16;
  static __device__ float2 widen(__nv_bfloat162 v) { return __bfloat1622float2(v); }
  static __device__ __nv_bfloat162 narrow(float2 v) { return __float22bfloat162_rn(v); }
  static __device__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
};
template <>
struct Half<__half2> {
  using Scalar = __half;
  static __device__ float2 widen(__half2 v) { return __half22float2(v); }
  static __device__ __half2 narrow(float2 v) { return __float22half2_rn(v); }
  static __device__ float widen(__half v) { return __half2float(v); }
};

// Eight values from one 16-byte load, and back.
template <typename Pair>
__device__ inline void unpack(const uint4& raw, float (&v)[kVector]) {
  const Pair* pairs = reinterpret_cast<const Pair*>(&raw);
#pragma unroll
  for (int k = 0; k < kVector / 2; ++k) {
    const float2 f = Half<Pair>::widen(pairs[k]);
    v[2 * k] = f.x;
    v[2 * k + 1] = f.y;
  }
}

template <typename Pair>
__device__ inline uint4 pack(const float (&v)[kVector]) {
  uint4 raw;
  Pair* pairs = reinterpret_cast<Pair*>(&raw);
#pragma unroll
  for (int k = 0; k < kVector / 2; ++k)
    pairs[k] = Half<Pair>::narrow(make_float2(v[2 * k], v[2 * k + 1]));
  return raw;
}

}  // namespace vit::cuda
