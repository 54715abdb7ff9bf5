// Device element types and the one place floats are converted: to_float / from_float.
// CUDA uses its native __half / __nv_bfloat16. HIP 5.2 (Debian) has no hip_bf16.h, so bf16 is
// a 16-bit wrapper converted with round-to-nearest-even bit arithmetic.
#pragma once
#include <cstdint>

#include "harness/dtype.h"
#include "kernels/common/compat.h"

#if defined(KBENCH_HIP) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_fp16.h>
namespace kbench {
using half_t = __half;
struct bf16_t {
  uint16_t bits;
};
__device__ __forceinline__ float to_float(bf16_t v) {
  return __uint_as_float(static_cast<uint32_t>(v.bits) << 16);
}
template <class T>
__device__ __forceinline__ T from_float(float f);
template <>
__device__ __forceinline__ bf16_t from_float<bf16_t>(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{0x7fc0};  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);                              // round to nearest even
  return bf16_t{static_cast<uint16_t>(u >> 16)};
}
}  // namespace kbench
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
namespace kbench {
using half_t = __half;
using bf16_t = __nv_bfloat16;
__device__ __forceinline__ float to_float(bf16_t v) { return __bfloat162float(v); }
template <class T>
__device__ __forceinline__ T from_float(float f);
template <>
__device__ __forceinline__ bf16_t from_float<bf16_t>(float f) { return __float2bfloat16_rn(f); }
}  // namespace kbench
#endif

namespace kbench {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(half_t v) { return __half2float(v); }
template <>
__device__ __forceinline__ float from_float<float>(float f) { return f; }
template <>
__device__ __forceinline__ half_t from_float<half_t>(float f) { return __float2half_rn(f); }

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with the device type of t: the only switch on DType in device code.
template <class F>
void dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(TypeTag<float>{}); return;
    case DType::f16: f(TypeTag<half_t>{}); return;
    case DType::bf16: f(TypeTag<bf16_t>{}); return;
  }
}

}  // namespace kbench
