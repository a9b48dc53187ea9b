// softmax and log_softmax along one dim, nll_loss and cross_entropy, and their backward: one block per line
// or sample (grid-stride), the maximum and the sums reduced across the block, as the CPU computes them
// (core/ops/nn.cpp).
#include <cmath>

#include "core/ops/cuda/block_reduce.cuh"
#include "core/ops/cuda/launch.h"
#include "core/ops/cuda/numeric.cuh"

namespace oneflow::cuda {
namespace {

template <typename T, bool kLog>
__global__ void SoftmaxKernel(SoftmaxArgs a) {
  using C = typename Wide<T>::type;
  __shared__ Acc shared[kThreads / 32];
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  for (int64_t l = blockIdx.x; l < a.lines; l += gridDim.x) {
    const int64_t base = (l / a.inner) * a.n * a.inner + l % a.inner;
    Acc best{0.0, -1};
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) {
      best = MaxOf()(best, Acc{static_cast<double>(Wide<T>::Load(x + base + k * a.inner)), k});
    }
    const C m = static_cast<C>(BlockReduce(best, shared, MaxOf()).value);
    double sum = 0;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) {
      const int64_t i = base + k * a.inner;
      const C e = exp(Wide<T>::Load(x + i) - m);
      if constexpr (!kLog) Wide<T>::Store(y + i, e);
      sum += static_cast<double>(e);
    }
    sum = BlockSum(sum, shared);
    if constexpr (kLog) {
      const C log_sum = static_cast<C>(log(sum));
      for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) {
        const int64_t i = base + k * a.inner;
        Wide<T>::Store(y + i, (Wide<T>::Load(x + i) - m) - log_sum);
      }
    } else {
      // Each thread rescales the elements it wrote itself (same k), so no synchronisation is needed.
      const C inv = static_cast<C>(1.0 / sum);
      for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) {
        const int64_t i = base + k * a.inner;
        Wide<T>::Store(y + i, Wide<T>::Load(y + i) * inv);
      }
    }
  }
}

// softmax: dx = y (dy - sum(dy y)); log_softmax: dx = dy - exp(y) sum(dy).
template <typename T, bool kLog>
__global__ void SoftmaxBackwardKernel(SoftmaxArgs a) {
  using C = typename Wide<T>::type;
  __shared__ Acc shared[kThreads / 32];
  const T* y = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.dy);
  T* dx = static_cast<T*>(a.y);
  for (int64_t l = blockIdx.x; l < a.lines; l += gridDim.x) {
    const int64_t base = (l / a.inner) * a.n * a.inner + l % a.inner;
    double sum = 0;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) {
      const int64_t i = base + k * a.inner;
      sum += kLog ? static_cast<double>(Wide<T>::Load(dy + i))
                  : static_cast<double>(Wide<T>::Load(dy + i) * Wide<T>::Load(y + i));
    }
    const C total = static_cast<C>(BlockSum(sum, shared));
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) {
      const int64_t i = base + k * a.inner;
      const C yi = Wide<T>::Load(y + i), dyi = Wide<T>::Load(dy + i);
      Wide<T>::Store(dx + i, kLog ? dyi - exp(yi) * total : yi * (dyi - total));
    }
  }
}

template <typename T>
void Launch(bool log, bool backward, const SoftmaxArgs& a, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(a.lines < 65536 ? a.lines : 65536);
  if (backward) {
    if (log) return SoftmaxBackwardKernel<T, true><<<blocks, kThreads, 0, stream>>>(a);
    return SoftmaxBackwardKernel<T, false><<<blocks, kThreads, 0, stream>>>(a);
  }
  if (log) return SoftmaxKernel<T, true><<<blocks, kThreads, 0, stream>>>(a);
  return SoftmaxKernel<T, false><<<blocks, kThreads, 0, stream>>>(a);
}

// Sample i's class values: its log-sum-exp, sum_c w_c x_c / C and sum_c w_c / C (cross_entropy's RowStats).
struct RowStats {
  double lse, wmean, wsum;
};
template <typename T>
__device__ RowStats StatsOf(const LossArgs& a, const T* x, const T* w, int64_t base, Acc* shared) {
  using C = typename Wide<T>::type;
  Acc best{0.0, -1};
  for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x) {
    best = MaxOf()(best, Acc{static_cast<double>(Wide<T>::Load(x + base + k * a.inner)), k});
  }
  const C m = static_cast<C>(BlockReduce(best, shared, MaxOf()).value);
  double sum = 0, total = 0, weights = 0;
  for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x) {
    const C xk = Wide<T>::Load(x + base + k * a.inner);
    const double wk = w != nullptr ? ToDouble(w + k) : 1.0;
    sum += static_cast<double>(exp(xk - m));
    total += wk * static_cast<double>(xk);
    weights += wk;
  }
  sum = BlockSum(sum, shared);
  total = BlockSum(total, shared);
  weights = BlockSum(weights, shared);
  return {static_cast<double>(m) + log(sum), total / static_cast<double>(a.c), weights / static_cast<double>(a.c)};
}

template <typename T>
__global__ void LossKernel(LossArgs a) {
  __shared__ Acc shared[kThreads / 32];
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.weight);
  for (int64_t i = blockIdx.x; i < a.samples; i += gridDim.x) {
    const int64_t base = (i / a.inner) * a.c * a.inner + i % a.inner, t = a.target[i];
    double row = 0;
    if (t != a.ignore_index) {
      const double wt = w != nullptr ? ToDouble(w + t) : 1.0;
      if (a.nll) {
        row = -wt * ToDouble(x + base + t * a.inner);
      } else {
        const RowStats s = StatsOf(a, x, w, base, shared);
        const double nll = wt * (s.lse - ToDouble(x + base + t * a.inner));
        const double eps = a.label_smoothing;
        row = eps == 0.0 ? nll : (1.0 - eps) * nll + eps * (s.wsum * s.lse - s.wmean);
      }
    }
    if (threadIdx.x != 0) continue;
    if (a.reduction == LossReduction::kNone) {
      static_cast<T*>(a.out)[i] = Wide<T>::FromDouble(row);
    } else {
      a.rows[i] = row;
    }
  }
}

// The rows' sum (kSum) or weighted mean (kMean; a zero total weight gives NaN, as PyTorch): one block.
template <typename T>
__global__ void SumRowsKernel(LossArgs a) {
  __shared__ Acc shared[kThreads / 32];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < a.samples; i += blockDim.x) sum += a.rows[i];
  sum = BlockSum(sum, shared);
  if (threadIdx.x == 0) {
    static_cast<T*>(a.out)[0] = Wide<T>::FromDouble(a.reduction == LossReduction::kMean ? sum / a.total_weight : sum);
  }
}

// dx[i, c] = g_i ((1 - eps) w_t (softmax_c - [c == t]) + eps / C (W softmax_c - w_c)) for cross_entropy,
// -g_i w_t [c == t] for nll_loss; g_i: dy[i] (none), dy (sum), dy / total weight (mean).
template <typename T>
__global__ void LossBackwardKernel(LossArgs a) {
  __shared__ Acc shared[kThreads / 32];
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.weight);
  const T* dy = static_cast<const T*>(a.dy);
  T* dx = static_cast<T*>(a.out);
  for (int64_t i = blockIdx.x; i < a.samples; i += gridDim.x) {
    const int64_t base = (i / a.inner) * a.c * a.inner + i % a.inner, t = a.target[i];
    if (t == a.ignore_index) {
      for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x) dx[base + k * a.inner] = Wide<T>::FromDouble(0.0);
      continue;
    }
    const double g = a.reduction == LossReduction::kNone   ? ToDouble(dy + i)
                     : a.reduction == LossReduction::kMean ? ToDouble(dy) / a.total_weight
                                                           : ToDouble(dy);
    const double wt = w != nullptr ? ToDouble(w + t) : 1.0;
    if (a.nll) {
      for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x) {
        dx[base + k * a.inner] = Wide<T>::FromDouble(k == t ? -g * wt : 0.0);
      }
      continue;
    }
    const RowStats s = StatsOf(a, x, w, base, shared);
    const double eps = a.label_smoothing, smooth = eps / static_cast<double>(a.c);
    const double ps = (1.0 - eps) * wt + eps * s.wsum;
    for (int64_t k = threadIdx.x; k < a.c; k += blockDim.x) {
      const int64_t j = base + k * a.inner;
      const double wk = w != nullptr ? ToDouble(w + k) : 1.0;
      double d = g * (ps * exp(ToDouble(x + j) - s.lse) - smooth * wk);
      if (k == t) d -= g * (1.0 - eps) * wt;
      dx[j] = Wide<T>::FromDouble(d);
    }
  }
}

template <typename T>
void LaunchLossOf(bool backward, const LossArgs& a, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(a.samples < 65536 ? a.samples : 65536);
  if (backward) return LossBackwardKernel<T><<<blocks, kThreads, 0, stream>>>(a);
  if (blocks > 0) LossKernel<T><<<blocks, kThreads, 0, stream>>>(a);
  if (a.reduction != LossReduction::kNone) SumRowsKernel<T><<<1, kThreads, 0, stream>>>(a);
}

}  // namespace

void LaunchSoftmax(bool log, bool backward, Element dtype, const SoftmaxArgs& args, cudaStream_t stream) {
  if (args.lines == 0 || args.n == 0) return;
  VisitFloating(dtype, [&](auto tag) { Launch<decltype(tag)>(log, backward, args, stream); });
}

void LaunchLoss(bool backward, Element dtype, const LossArgs& args, cudaStream_t stream) {
  if (args.samples == 0 && (backward || args.reduction == LossReduction::kNone)) return;
  VisitFloating(dtype, [&](auto tag) { LaunchLossOf<decltype(tag)>(backward, args, stream); });
}

}  // namespace oneflow::cuda
