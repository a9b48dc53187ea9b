// Reductions across a thread block (kThreads threads), for kernels that give each block a line to reduce.
#pragma once

#include <cstdint>

#include "core/ops/cuda/index.cuh"

namespace oneflow::cuda {

// A running value with the index it came from (argmax; sums and maxima of values ignore the index).
struct Acc {
  double value;
  int64_t index;  // -1: nothing seen
};

// Every thread gets combine() over the block's values. `shared` holds one Acc per warp; all threads of the
// block must call it (it synchronises them).
template <typename Combine>
__device__ inline Acc BlockReduce(Acc v, Acc* shared, Combine combine) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    Acc other{__shfl_down_sync(0xffffffffu, v.value, offset), __shfl_down_sync(0xffffffffu, v.index, offset)};
    v = combine(v, other);
  }
  __syncthreads();  // shared may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? shared[lane] : Acc{0.0, -1};
    for (int offset = 16; offset > 0; offset /= 2) {
      Acc other{__shfl_down_sync(0xffffffffu, v.value, offset), __shfl_down_sync(0xffffffffu, v.index, offset)};
      v = combine(v, other);
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

struct SumOf {
  __device__ Acc operator()(Acc a, Acc b) const { return {a.value + b.value, 0}; }
};
struct MaxOf {  // NaN wins (as std::max's left operand does not: the CPU's softmax never sees NaN maxima)
  __device__ Acc operator()(Acc a, Acc b) const {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    return (a.value != a.value || a.value >= b.value) ? a : b;
  }
};

// The sum of v over the block, every thread getting it.
__device__ inline double BlockSum(double v, Acc* shared) { return BlockReduce(Acc{v, 0}, shared, SumOf()).value; }

}  // namespace oneflow::cuda
