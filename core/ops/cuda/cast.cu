// cast between every pair of dtypes: one thread per element, x and y read and written at their strides.
#include <cstdint>

#include "core/ops/cuda/index.cuh"
#include "core/ops/cuda/launch.h"
#include "core/ops/cuda/numeric.cuh"

namespace oneflow::cuda {
namespace {

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// As the CPU's Convert<To, From> (core/ops/cpu/elementwise_loops.h).
template <typename To, typename From>
__device__ inline To Convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalf<From>) {
    return Convert<To>(Wide<From>::Load(&v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (kIsHalf<To>) {
    To out;
    Wide<To>::Store(&out, static_cast<float>(v));
    return out;
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!(v == v)) return To(0);
    constexpr From kLimit = From(9223372036854775808.0);  // 2^63, exact in float and double
    const int64_t i = v >= kLimit ? INT64_MAX : v <= -kLimit ? INT64_MIN : static_cast<int64_t>(v);
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
__global__ void CastKernel(CastArgs a) {
  const From* x = static_cast<const From*>(a.x);
  To* y = static_cast<To*>(a.y);
  OF_CUDA_GRID_LOOP(i, a.numel) {
    y[StridedOffset(i, a.ndim, a.sizes, a.y_strides)] = Convert<To>(x[StridedOffset(i, a.ndim, a.sizes, a.x_strides)]);
  }
}

}  // namespace

void LaunchCast(Element from, Element to, const CastArgs& args, cudaStream_t stream) {
  if (args.numel == 0) return;
  Visit(from, [&](auto in) {
    Visit(to, [&](auto out) {
      CastKernel<decltype(in), decltype(out)><<<BlocksFor(args.numel), kThreads, 0, stream>>>(args);
    });
  });
}

}  // namespace oneflow::cuda
