// Index arithmetic the CUDA kernels share: grid-stride loops and the offset of an element of a strided layout.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace oneflow::cuda {

inline constexpr int kThreads = 256;  // per block

// Blocks for n elements with grid-stride loops: enough to fill the device, no more than needed.
inline unsigned BlocksFor(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 8192));
}

// The element offset, at `strides`, of row-major index `i` of `sizes`.
__device__ inline int64_t StridedOffset(int64_t i, int32_t ndim, const int64_t* sizes, const int64_t* strides) {
  int64_t offset = 0;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    const int64_t size = sizes[d];
    offset += (i % size) * strides[d];
    i /= size;
  }
  return offset;
}

#define OF_CUDA_GRID_LOOP(i, n)                                                          \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace oneflow::cuda
