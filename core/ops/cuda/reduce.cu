// Reductions (sum, mean, max, min, argmax, var, std): one block per output element (grid-stride over the
// outputs), its threads striding over the reduced elements, then a reduction across the block.
#include <cmath>

#include "core/ops/cuda/block_reduce.cuh"
#include "core/ops/cuda/launch.h"
#include "core/ops/cuda/numeric.cuh"

namespace oneflow::cuda {
namespace {

// max/min/argmax: NaN wins (the first NaN), else the larger (smaller) value, ties to the first index.
template <bool kMax>
__device__ inline Acc Better(Acc a, Acc b) {
  if (b.index < 0) return a;
  if (a.index < 0) return b;
  const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
  if (a_nan || b_nan) return (a_nan && (!b_nan || a.index < b.index)) ? a : b;
  if (a.value == b.value) return a.index < b.index ? a : b;
  return (kMax ? a.value > b.value : a.value < b.value) ? a : b;
}

template <typename T, ReduceKind kKind>
__global__ void ReduceKernel(ReduceArgs args) {
  __shared__ Acc shared[kThreads / 32];
  const T* x = static_cast<const T*>(args.x);
  for (int64_t o = blockIdx.x; o < args.num_outputs; o += gridDim.x) {
    const T* base = x + StridedOffset(o, args.kept_ndim, args.kept_sizes, args.kept_strides);
    auto at = [&](int64_t r) {
      return ToDouble(base + StridedOffset(r, args.reduced_ndim, args.reduced_sizes, args.reduced_strides));
    };
    double result = 0;
    if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin || kKind == ReduceKind::kArgmax) {
      constexpr bool kMax = kKind != ReduceKind::kMin;
      Acc best{0.0, -1};
      for (int64_t r = threadIdx.x; r < args.num_reduced; r += blockDim.x) best = Better<kMax>(best, Acc{at(r), r});
      best = BlockReduce(best, shared, [](Acc a, Acc b) { return Better<kMax>(a, b); });
      if constexpr (kKind == ReduceKind::kArgmax) {
        if (threadIdx.x == 0) static_cast<int64_t*>(args.y)[o] = best.index;
        continue;
      }
      result = best.value;
    } else {
      Acc sum{0.0, 0};
      for (int64_t r = threadIdx.x; r < args.num_reduced; r += blockDim.x) sum.value += at(r);
      sum = BlockReduce(sum, shared, SumOf());
      result = sum.value;
      if constexpr (kKind == ReduceKind::kMean) result /= static_cast<double>(args.num_reduced);
      if constexpr (kKind == ReduceKind::kVar || kKind == ReduceKind::kStd) {
        // Two passes, as on the CPU: the mean, then the squared deviations from it (no cancellation).
        const double mean = result / static_cast<double>(args.num_reduced);
        Acc squares{0.0, 0};
        for (int64_t r = threadIdx.x; r < args.num_reduced; r += blockDim.x) {
          const double d = at(r) - mean;
          squares.value += d * d;
        }
        squares = BlockReduce(squares, shared, SumOf());
        result = squares.value / args.denominator;
        if constexpr (kKind == ReduceKind::kStd) result = sqrt(result);
      }
    }
    if (threadIdx.x == 0) static_cast<T*>(args.y)[o] = Wide<T>::FromDouble(result);
  }
}

template <typename T>
void LaunchKind(ReduceKind kind, const ReduceArgs& args, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(args.num_outputs < 65536 ? args.num_outputs : 65536);
  switch (kind) {
    case ReduceKind::kSum:
      return ReduceKernel<T, ReduceKind::kSum><<<blocks, kThreads, 0, stream>>>(args);
    case ReduceKind::kMean:
      return ReduceKernel<T, ReduceKind::kMean><<<blocks, kThreads, 0, stream>>>(args);
    case ReduceKind::kMax:
      return ReduceKernel<T, ReduceKind::kMax><<<blocks, kThreads, 0, stream>>>(args);
    case ReduceKind::kMin:
      return ReduceKernel<T, ReduceKind::kMin><<<blocks, kThreads, 0, stream>>>(args);
    case ReduceKind::kArgmax:
      return ReduceKernel<T, ReduceKind::kArgmax><<<blocks, kThreads, 0, stream>>>(args);
    case ReduceKind::kVar:
      return ReduceKernel<T, ReduceKind::kVar><<<blocks, kThreads, 0, stream>>>(args);
    case ReduceKind::kStd:
      return ReduceKernel<T, ReduceKind::kStd><<<blocks, kThreads, 0, stream>>>(args);
  }
}

}  // namespace

void LaunchReduce(ReduceKind kind, Element dtype, const ReduceArgs& args, cudaStream_t stream) {
  if (args.num_outputs == 0) return;
  VisitFloating(dtype, [&](auto tag) { LaunchKind<decltype(tag)>(kind, args, stream); });
}

}  // namespace oneflow::cuda
