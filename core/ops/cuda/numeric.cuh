// The element types of the CUDA kernels: the storage type T of a tensor and the type it is computed in
// (float for float16 and bfloat16, as the CPU computes them; T itself otherwise).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/ops/cuda/launch.h"

namespace oneflow::cuda {

template <typename T>
struct Wide {
  using type = T;
  __device__ static T Load(const T* p) { return *p; }
  __device__ static void Store(T* p, T v) { *p = v; }
  __device__ static T FromDouble(double v) { return static_cast<T>(v); }
};
template <>
struct Wide<__half> {
  using type = float;
  __device__ static float Load(const __half* p) { return __half2float(*p); }
  __device__ static void Store(__half* p, float v) { *p = __float2half_rn(v); }
  __device__ static __half FromDouble(double v) { return __double2half(v); }
};
template <>
struct Wide<__nv_bfloat16> {
  using type = float;
  __device__ static float Load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
  __device__ static void Store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
  __device__ static __nv_bfloat16 FromDouble(double v) { return __double2bfloat16(v); }
};

// An element as a double (the accumulators of the reductions).
template <typename T>
__device__ inline double ToDouble(const T* p) {
  return static_cast<double>(Wide<T>::Load(p));
}

// Calls fn(T{}) with the storage type T of `e` (host code: launchers pick their kernel's instance).
template <typename Fn>
void Visit(Element e, Fn&& fn) {
  switch (e) {
    case Element::kBool:
      return fn(bool{});
    case Element::kInt8:
      return fn(int8_t{});
    case Element::kUInt8:
      return fn(uint8_t{});
    case Element::kInt16:
      return fn(int16_t{});
    case Element::kInt32:
      return fn(int32_t{});
    case Element::kInt64:
      return fn(int64_t{});
    case Element::kFloat16:
      return fn(__half{});
    case Element::kBFloat16:
      return fn(__nv_bfloat16{});
    case Element::kFloat32:
      return fn(float{});
    case Element::kFloat64:
      return fn(double{});
  }
}
// As Visit, for the kernels of floating dtypes only (the others are never registered for them).
template <typename Fn>
void VisitFloating(Element e, Fn&& fn) {
  Visit(e, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      fn(tag);
    }
  });
}

}  // namespace oneflow::cuda
