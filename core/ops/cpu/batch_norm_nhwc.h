// Batch normalisation of float32 channels-last activations with AVX2: x is `rows` rows of `c`
// channels (N * H * W rows of an NHWC tensor), normalised per channel. batch_norm's float32 kernels call
// these where BatchNormNhwcRuns (core/ops/dnnl/batch_norm.cpp) and oneDNN otherwise.
//
// Note [Channels-last batch norm]
// Batch norm is bound by memory traffic (one pass over a 3.2 MB activation costs ~0.1-0.15 ms on the
// AVX2 machines measured, whatever is computed on it): oneDNN 2.6.3's kernels compute the mean and the
// variance in separate passes over x, and a ReLU or a residual add after the normalisation is one more
// pass (two for an add). These kernels read x once for the statistics: each chunk of rows small
// enough for the L1 cache (the L2 at many channels) gets its mean and sum of squared deviations (two
// sweeps of the cached chunk), and the chunks are combined in float64 in a fixed order (Chan et al.'s
// parallel formula), so the result does not depend on the thread count and is as accurate as a two-pass
// variance. The normalisation can add a residual and apply a ReLU in the same pass (batch_norm_add_relu).
// The backward reads x and grad_y twice: once for the sums, in chunks, and once for grad_x.
#pragma once

#include <cstdint>

#include "core/device/thread_pool.h"

namespace oneflow::cpu {

// Whether these kernels run c channels here: an x86 CPU with AVX2 and FMA, and c a multiple of 8 (the
// vectors' width).
bool BatchNormNhwcRuns(int64_t c);

// mean and var (biased) of each channel over `rows` >= 1 rows of x.
void BatchNormNhwcStats(const float* x, int64_t rows, int64_t c, float* mean, float* var, ThreadPool& pool);

// y = x * scale + shift per channel, + addend (rows x c, or null), then max(y, 0) when `relu` (NaN stays
// NaN). y may be x or addend (in place).
void BatchNormNhwcApply(const float* x, int64_t rows, int64_t c, const float* scale, const float* shift,
                        const float* addend, bool relu, float* y, ThreadPool& pool);

// The backward of batch_norm for mean and var (what the forward normalised with), weight (c values, or
// null for ones) and grad_y:
//   grad_bias = sum of grad_y, grad_weight = sum of grad_y * x_hat,
//   grad_x = weight * invstd * (grad_y - mean(grad_y) - x_hat * mean(grad_y * x_hat))  in training,
//   grad_x = weight * invstd * grad_y                                                  otherwise,
// with x_hat = (x - mean) * invstd and invstd = 1 / sqrt(var + eps). grad_x may be grad_y or x (in place).
// With relu_scale and relu_shift (c values each, or both null) it is the backward of relu(batch_norm(x)) as
// BatchNormNhwcApply computed it with those scale and shift: grad_y counts only where x * relu_scale +
// relu_shift > 0 (Note [Batch norm's ReLU gradient from x] in core/ops/dnnl/batch_norm.cpp).
struct BatchNormNhwcBackward {
  const float* x;
  const float* grad_y;
  const float* mean;
  const float* var;
  const float* weight;  // null: ones
  int64_t rows, c;
  double eps;
  bool training;
  float* grad_x;
  float* grad_weight;
  float* grad_bias;
  const float* relu_scale = nullptr;
  const float* relu_shift = nullptr;
};
void RunBatchNormNhwcBackward(const BatchNormNhwcBackward& b, ThreadPool& pool);

}  // namespace oneflow::cpu
