// Channels-last batch normalisation with AVX2 (see batch_norm_nhwc.h, Note [Channels-last batch norm]).
#include "core/ops/cpu/batch_norm_nhwc.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/ops/cpu/x86_simd.h"

namespace oneflow::cpu {

#if defined(__x86_64__)

bool BatchNormNhwcRuns(int64_t c) { return HasAvx2Fma() && c > 0 && c % 8 == 0; }

namespace {

// Rows per chunk: a chunk of x (and of grad_y) stays in the L1 cache between its two sweeps.
int64_t ChunkRows(int64_t c) { return std::max<int64_t>(1, 4096 / c); }
// Rows per task of the elementwise passes: enough work to be worth a thread.
int64_t ApplyGrain(int64_t c) { return std::max<int64_t>(1, 16384 / c); }

// Per chunk k and channel: two partial values at partials[(2 k + i) c + channel].
struct Chunks {
  int64_t rows, c, per_chunk, count;
  explicit Chunks(int64_t rows_, int64_t c_)
      : rows(rows_), c(c_), per_chunk(ChunkRows(c_)), count((rows_ + per_chunk - 1) / per_chunk) {}
  int64_t begin(int64_t k) const { return k * per_chunk; }
  int64_t size(int64_t k) const { return std::min(per_chunk, rows - k * per_chunk); }
};

// What SumRows adds up for 8 channels over rows of x (and y): x, (x - m)^2, or y * (x - m).
enum class Term { kX, kSquaredDeviation, kYTimesDeviation };

template <Term kTerm>
OF_AVX2 inline __m256 Accumulate(__m256 acc, const float* x, const float* y, __m256 m) {
  if constexpr (kTerm == Term::kX) {
    return _mm256_add_ps(acc, _mm256_loadu_ps(x));
  } else if constexpr (kTerm == Term::kSquaredDeviation) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x), m);
    return _mm256_fmadd_ps(d, d, acc);
  } else {
    return _mm256_fmadd_ps(_mm256_loadu_ps(y), _mm256_sub_ps(_mm256_loadu_ps(x), m), acc);
  }
}

// The sum of kTerm over n rows c floats apart; 4 independent accumulators, since a single chain of
// vector adds would be bound by their latency, not by the loads.
template <Term kTerm>
OF_AVX2 __m256 SumRows(const float* x, const float* y, __m256 m, int64_t n, int64_t c) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t r = 0;
  for (; r + 4 <= n; r += 4) {
    for (int u = 0; u < 4; ++u) {
      const int64_t i = (r + u) * c;
      acc[u] = Accumulate<kTerm>(acc[u], x + i, y == nullptr ? nullptr : y + i, m);
    }
  }
  for (; r < n; ++r) acc[0] = Accumulate<kTerm>(acc[0], x + r * c, y == nullptr ? nullptr : y + r * c, m);
  return _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
}

// Chunk k's mean and sum of squared deviations from it, per channel.
OF_AVX2 void ChunkMoments(const float* x, const Chunks& ch, int64_t k, float* mean, float* m2) {
  const int64_t n = ch.size(k), c = ch.c;
  const float* base = x + ch.begin(k) * c;
  const __m256 inv_n = _mm256_set1_ps(1.0f / static_cast<float>(n));
  for (int64_t j = 0; j < c; j += 8) {
    const __m256 mu = _mm256_mul_ps(SumRows<Term::kX>(base + j, nullptr, _mm256_setzero_ps(), n, c), inv_n);
    _mm256_storeu_ps(mean + j, mu);
    _mm256_storeu_ps(m2 + j, SumRows<Term::kSquaredDeviation>(base + j, nullptr, mu, n, c));
  }
}

// Backward, chunk k: the sums of grad_y and of grad_y * (x - mean) per channel (a second sweep over the
// cached chunk).
OF_AVX2 void ChunkGradSums(const BatchNormNhwcBackward& b, const Chunks& ch, int64_t k, float* sum_g, float* sum_gx) {
  const int64_t n = ch.size(k), c = ch.c;
  const float* x = b.x + ch.begin(k) * c;
  const float* dy = b.grad_y + ch.begin(k) * c;
  for (int64_t j = 0; j < c; j += 8) {
    const __m256 mu = _mm256_loadu_ps(b.mean + j);
    _mm256_storeu_ps(sum_g + j, SumRows<Term::kX>(dy + j, nullptr, mu, n, c));
    _mm256_storeu_ps(sum_gx + j, SumRows<Term::kYTimesDeviation>(x + j, dy + j, mu, n, c));
  }
}

// grad_x for rows [begin, end): k * (grad_y - a - (x - mean) * q) per channel (a = q = 0 outside training).
OF_AVX2 void GradX(const BatchNormNhwcBackward& b, const float* k, const float* a, const float* q, int64_t begin,
                   int64_t end) {
  const int64_t c = b.c;
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t j = 0; j < c; j += 8) {
      const int64_t i = r * c + j;
      const __m256 g = _mm256_loadu_ps(b.grad_y + i);
      const __m256 xm = _mm256_sub_ps(_mm256_loadu_ps(b.x + i), _mm256_loadu_ps(b.mean + j));
      const __m256 d = _mm256_fnmadd_ps(xm, _mm256_loadu_ps(q + j), _mm256_sub_ps(g, _mm256_loadu_ps(a + j)));
      _mm256_storeu_ps(b.grad_x + i, _mm256_mul_ps(_mm256_loadu_ps(k + j), d));
    }
  }
}

OF_AVX2 void ApplyRows(const float* x, int64_t c, const float* scale, const float* shift, const float* addend,
                       bool relu, float* y, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t j = 0; j < c; j += 8) {
      const int64_t i = r * c + j;
      __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(scale + j), _mm256_loadu_ps(shift + j));
      if (addend != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(addend + i));
      if (relu) v = _mm256_max_ps(_mm256_setzero_ps(), v);  // max(0, NaN) is NaN
      _mm256_storeu_ps(y + i, v);
    }
  }
}

}  // namespace

void BatchNormNhwcStats(const float* x, int64_t rows, int64_t c, float* mean, float* var, ThreadPool& pool) {
  const Chunks ch(rows, c);
  std::vector<float> partials(static_cast<size_t>(2 * ch.count * c));
  pool.ParallelFor(ch.count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) ChunkMoments(x, ch, k, &partials[2 * k * c], &partials[(2 * k + 1) * c]);
  });
  // Chunks combined in order (Chan et al.): the result does not depend on how the chunks were shared.
  // Chunk by chunk, every channel at once (the weights depend on the counts only).
  std::vector<double> mu(static_cast<size_t>(c), 0.0), m2(static_cast<size_t>(c), 0.0);
  double n = 0;
  for (int64_t k = 0; k < ch.count; ++k) {
    const double nb = static_cast<double>(ch.size(k)), total = n + nb;
    const double weight = nb / total, cross = n * nb / total;
    const float* chunk_mean = &partials[2 * k * c];
    const float* chunk_m2 = &partials[(2 * k + 1) * c];
    for (int64_t j = 0; j < c; ++j) {
      const double delta = chunk_mean[j] - mu[j];
      mu[j] += delta * weight;
      m2[j] += chunk_m2[j] + delta * delta * cross;
    }
    n = total;
  }
  for (int64_t j = 0; j < c; ++j) {
    mean[j] = static_cast<float>(mu[j]);
    var[j] = static_cast<float>(m2[j] / n);
  }
}

void BatchNormNhwcApply(const float* x, int64_t rows, int64_t c, const float* scale, const float* shift,
                        const float* addend, bool relu, float* y, ThreadPool& pool) {
  pool.ParallelFor(rows, ApplyGrain(c),
                   [&](int64_t begin, int64_t end) { ApplyRows(x, c, scale, shift, addend, relu, y, begin, end); });
}

void RunBatchNormNhwcBackward(const BatchNormNhwcBackward& b, ThreadPool& pool) {
  const Chunks ch(b.rows, b.c);
  const int64_t c = b.c;
  std::vector<float> partials(static_cast<size_t>(2 * ch.count * c));
  pool.ParallelFor(ch.count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) ChunkGradSums(b, ch, k, &partials[2 * k * c], &partials[(2 * k + 1) * c]);
  });
  std::vector<float> k(static_cast<size_t>(c)), a(static_cast<size_t>(c), 0.0f), q(static_cast<size_t>(c), 0.0f);
  const double count = static_cast<double>(b.rows);
  std::vector<double> sum_g(static_cast<size_t>(c), 0.0), sum_gx(static_cast<size_t>(c), 0.0);
  for (int64_t i = 0; i < ch.count; ++i) {  // in chunk order, every channel at once
    for (int64_t j = 0; j < c; ++j) {
      sum_g[j] += partials[2 * i * c + j];
      sum_gx[j] += partials[(2 * i + 1) * c + j];
    }
  }
  for (int64_t j = 0; j < c; ++j) {
    const double invstd = 1 / std::sqrt(static_cast<double>(b.var[j]) + b.eps);
    b.grad_bias[j] = static_cast<float>(sum_g[j]);
    b.grad_weight[j] = static_cast<float>(sum_gx[j] * invstd);
    k[j] = static_cast<float>((b.weight != nullptr ? b.weight[j] : 1.0) * invstd);
    if (b.training) {
      a[j] = static_cast<float>(sum_g[j] / count);
      q[j] = static_cast<float>(invstd * invstd * sum_gx[j] / count);
    }
  }
  pool.ParallelFor(b.rows, ApplyGrain(c),
                   [&](int64_t begin, int64_t end) { GradX(b, k.data(), a.data(), q.data(), begin, end); });
}

#else  // no AVX2 kernels on other architectures

bool BatchNormNhwcRuns(int64_t) { return false; }
void BatchNormNhwcStats(const float*, int64_t, int64_t, float*, float*, ThreadPool&) {}
void BatchNormNhwcApply(const float*, int64_t, int64_t, const float*, const float*, const float*, bool, float*,
                        ThreadPool&) {}
void RunBatchNormNhwcBackward(const BatchNormNhwcBackward&, ThreadPool&) {}

#endif

}  // namespace oneflow::cpu
