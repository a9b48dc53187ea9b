// Channels-last batch normalisation with AVX2 (see batch_norm_nhwc.h, Note [Channels-last batch norm]).
#include "core/ops/cpu/batch_norm_nhwc.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/ops/cpu/x86_simd.h"

namespace oneflow::cpu {

#if defined(__x86_64__)

bool BatchNormNhwcRuns(int64_t c) { return HasAvx2Fma() && c > 0 && c % 8 == 0; }

namespace {

// Rows per chunk: a chunk of x (and of grad_y) stays in the L1 cache between its two sweeps, but has at least
// kMinChunkRows rows (Note [Chunks of many channels]).
constexpr int64_t kMinChunkRows = 16;
int64_t ChunkRows(int64_t c) { return std::max<int64_t>(kMinChunkRows, 4096 / c); }
// Rows per task of the elementwise passes: enough work to be worth a thread.
int64_t ApplyGrain(int64_t c) { return std::max<int64_t>(1, 16384 / c); }

// Note [Chunks in groups]
// The chunks' partial results are combined in float64 in a fixed order whatever the thread count: each
// group of (up to) kGroupChunks consecutive chunks in chunk order by the thread that computed them, then
// the groups in order, per channel. (Combining every chunk on the calling thread took as long as
// reading x: at 256 channels a chunk is 16 rows, and ResNet-50's batch of 16 at 56x56 has 3136 of them.)
// With SumRowwise, on 2 threads at 16 x 56 x 56 x 256 (51 MB): the statistics 3.3 -> 2.2 ms, the backward
// 10.6 -> 7.0 ms; ResNet-50's lazy step at batch 16 spends 8.5% of its time in batch norm, from 11%.
constexpr int64_t kGroupChunks = 16;

// Note [Chunks of many channels]
// Each chunk's sums are added into its group's in float64, by Chan's formula for the statistics (some 8
// operations per channel): a cost per channel that a chunk of few rows does not repay. At 2048 channels a
// chunk of 4096 floats is 2 rows, and those merges took twice the time of the chunks' sweeps (perf, 196 x
// 2048, ResNet-50's last stage at batch 4). So chunks have at least kMinChunkRows rows (their second sweep
// then reads them from the L2 cache), fewer chunks make a group where the rows are few (at least kMinGroups
// groups, for the threads), and the groups' merges run in parallel over channels where these are many.
// Per call on 2 threads (warm, best of 3000) at 196 x 2048: the statistics 184 -> 61 us, the backward 268
// -> 152 us; ResNet-50's batch norms at 1024 and 2048 channels, batch 4: 7.6 -> 6.1 ms per training step.
constexpr int64_t kMinGroups = 8;
// Channels per task of the groups' merges.
constexpr int64_t kMergeGrain = 512;

// Rows in chunks of per_chunk rows, chunks in groups of per_group (kGroupChunks, fewer where that would
// leave fewer than kMinGroups groups).
struct Chunks {
  int64_t rows, c, per_chunk, count, per_group;
  Chunks(int64_t rows_, int64_t c_)
      : rows(rows_),
        c(c_),
        per_chunk(ChunkRows(c_)),
        count((rows_ + per_chunk - 1) / per_chunk),
        per_group(std::clamp<int64_t>(count / kMinGroups, 1, kGroupChunks)) {}
  int64_t begin(int64_t k) const { return k * per_chunk; }
  int64_t size(int64_t k) const { return std::min(per_chunk, rows - k * per_chunk); }
  int64_t groups() const { return (count + per_group - 1) / per_group; }
  // Group g's chunks: [group_begin(g), group_end(g)).
  int64_t group_begin(int64_t g) const { return g * per_group; }
  int64_t group_end(int64_t g) const { return std::min(count, (g + 1) * per_group); }
};

// Chan et al.'s parallel formula: adds a part of nb rows with per-channel means mean_b and sums of squared
// deviations m2_b to the running n, mean and m2 (c channels).
template <typename T>
void Merge(int64_t c, double nb, const T* mean_b, const T* m2_b, double& n, double* mean, double* m2) {
  const double total = n + nb, weight = nb / total, cross = n * nb / total;
  for (int64_t j = 0; j < c; ++j) {
    const double delta = mean_b[j] - mean[j];
    mean[j] += delta * weight;
    m2[j] += m2_b[j] + delta * delta * cross;
  }
  n = total;
}

// What SumRowwise adds up per channel over rows of x (and y): x, (x - m)^2, y, or y * (x - m), where y
// (the backward's grad_y) is masked by x where a ReLU followed the batch norm (ReluMask).
enum class Term { kX, kSquaredDeviation, kY, kYTimesDeviation };

// The forward's ReLU as the backward sees it (BatchNormNhwcBackward's relu_scale and relu_shift): grad_y
// counts where x * scale + shift > 0, the value that BatchNormNhwcApply's ReLU passed. The mask keeps grad_y's
// bits there and gives +0 elsewhere, as relu_backward's select does (ReluGradFn, NaN included: NaN > 0 is
// false in both).
struct ReluMask {
  const float* scale = nullptr;
  const float* shift = nullptr;
};

// grad_y's vector at y as the backward reads it: masked by the vector of x at x with the mask's scale s and
// shift t where kMasked.
template <bool kMasked>
OF_AVX2 inline __m256 LoadGrad(const float* y, const float* x, __m256 s, __m256 t) {
  const __m256 g = _mm256_loadu_ps(y);
  if constexpr (!kMasked) return g;
  const __m256 z = _mm256_fmadd_ps(_mm256_loadu_ps(x), s, t);  // BatchNormNhwcApply's, before its max
  return _mm256_and_ps(g, _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_GT_OQ));
}

template <Term kTerm, bool kMasked>
OF_AVX2 inline __m256 Accumulate(__m256 acc, const float* x, const float* y, __m256 m, __m256 s, __m256 t) {
  if constexpr (kTerm == Term::kX) {
    return _mm256_add_ps(acc, _mm256_loadu_ps(x));
  } else if constexpr (kTerm == Term::kSquaredDeviation) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x), m);
    return _mm256_fmadd_ps(d, d, acc);
  } else if constexpr (kTerm == Term::kY) {
    return _mm256_add_ps(acc, LoadGrad<kMasked>(y, x, s, t));
  } else {
    return _mm256_fmadd_ps(LoadGrad<kMasked>(y, x, s, t), _mm256_sub_ps(_mm256_loadu_ps(x), m), acc);
  }
}

// sum[j] += kTerm of kRows rows of x (and y) from the first, c floats apart.
template <Term kTerm, bool kMasked, int kRows>
OF_AVX2 inline void AddRows(const float* x, const float* y, const float* m, const ReluMask& mask, int64_t c,
                            float* sum) {
  for (int64_t j = 0; j < c; j += 8) {
    const __m256 mj = kTerm == Term::kX || kTerm == Term::kY ? _mm256_setzero_ps() : _mm256_loadu_ps(m + j);
    const __m256 sj = kMasked ? _mm256_loadu_ps(mask.scale + j) : _mm256_setzero_ps();
    const __m256 tj = kMasked ? _mm256_loadu_ps(mask.shift + j) : _mm256_setzero_ps();
    __m256 s = _mm256_loadu_ps(sum + j);
    for (int q = 0; q < kRows; ++q) {
      s = Accumulate<kTerm, kMasked>(s, x + q * c + j, y == nullptr ? nullptr : y + q * c + j, mj, sj, tj);
    }
    _mm256_storeu_ps(sum + j, s);
  }
}

// sum[j] = the sum of kTerm over the n rows of x (and y) c floats apart, for every channel j, where m[j] is
// channel j's mean (unused for kX and kY): kRowsAtOnce rows at a time, the bytes in memory order, which the
// hardware prefetchers follow; the sums stay in the L1 cache. (Sums of 8 channels down the rows, in
// registers, read x at 15-19 GB/s on 2 threads where this reads 22-27, and a streaming read and write run at
// 40-50.) A row at a time, each vector of sums was loaded and stored again for every row; four rows per load
// and store took 17-20% less time for the statistics of ResNet-50's batch norms (3 to 51 MB, warm, 2 threads
// of an AVX-512 Xeon) and 2-15% less for the backward: 224 -> 213 ms of batch norm per lazy batch-16 step.
template <Term kTerm, bool kMasked = false>
OF_AVX2 void SumRowwise(const float* x, const float* y, const float* m, int64_t n, int64_t c, float* sum,
                        const ReluMask& mask = {}) {
  constexpr int kRowsAtOnce = 4;
  for (int64_t j = 0; j < c; j += 8) _mm256_storeu_ps(sum + j, _mm256_setzero_ps());
  int64_t r = 0;
  for (; r + kRowsAtOnce <= n; r += kRowsAtOnce) {
    AddRows<kTerm, kMasked, kRowsAtOnce>(x + r * c, y == nullptr ? nullptr : y + r * c, m, mask, c, sum);
  }
  for (; r < n; ++r) AddRows<kTerm, kMasked, 1>(x + r * c, y == nullptr ? nullptr : y + r * c, m, mask, c, sum);
}

// Chunk k's mean and sum of squared deviations from it, per channel (the second sweep reads the chunk from
// the L1 cache).
OF_AVX2 void ChunkMoments(const float* x, const Chunks& ch, int64_t k, float* mean, float* m2) {
  const int64_t n = ch.size(k), c = ch.c;
  const float* base = x + ch.begin(k) * c;
  SumRowwise<Term::kX>(base, nullptr, nullptr, n, c, mean);
  const __m256 inv_n = _mm256_set1_ps(1.0f / static_cast<float>(n));
  for (int64_t j = 0; j < c; j += 8) _mm256_storeu_ps(mean + j, _mm256_mul_ps(_mm256_loadu_ps(mean + j), inv_n));
  SumRowwise<Term::kSquaredDeviation>(base, nullptr, mean, n, c, m2);
}

// Backward, chunk k: the sums of grad_y and of grad_y * (x - mean) per channel (grad_y masked where kMasked).
template <bool kMasked>
OF_AVX2 void ChunkGradSums(const BatchNormNhwcBackward& b, const Chunks& ch, int64_t k, float* sum_g, float* sum_gx) {
  const int64_t n = ch.size(k), c = ch.c;
  const float* x = b.x + ch.begin(k) * c;
  const float* dy = b.grad_y + ch.begin(k) * c;
  const ReluMask mask{b.relu_scale, b.relu_shift};
  SumRowwise<Term::kY, kMasked>(x, dy, nullptr, n, c, sum_g, mask);
  SumRowwise<Term::kYTimesDeviation, kMasked>(x, dy, b.mean, n, c, sum_gx, mask);
}

// grad_x for rows [begin, end): k * (grad_y - a - (x - mean) * q) per channel (a = q = 0 outside training;
// grad_y masked where kMasked).
template <bool kMasked>
OF_AVX2 void GradX(const BatchNormNhwcBackward& b, const float* k, const float* a, const float* q, int64_t begin,
                   int64_t end) {
  const int64_t c = b.c;
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t j = 0; j < c; j += 8) {
      const int64_t i = r * c + j;
      const __m256 g = LoadGrad<kMasked>(b.grad_y + i, b.x + i, kMasked ? _mm256_loadu_ps(b.relu_scale + j) : zero,
                                         kMasked ? _mm256_loadu_ps(b.relu_shift + j) : zero);
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
  // Per group: its row count, then c means and c sums of squared deviations.
  const int64_t groups = ch.groups(), group_size = 1 + 2 * c;
  const std::unique_ptr<double[]> partials(new double[static_cast<size_t>(groups * group_size)]);  // zeroed per group
  pool.ParallelFor(groups, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> chunk(static_cast<size_t>(2 * c));
    for (int64_t g = begin; g < end; ++g) {
      double* group = &partials[g * group_size];
      std::fill(group, group + group_size, 0.0);
      for (int64_t k = ch.group_begin(g); k < ch.group_end(g); ++k) {
        ChunkMoments(x, ch, k, chunk.data(), chunk.data() + c);
        Merge(c, static_cast<double>(ch.size(k)), chunk.data(), chunk.data() + c, group[0], group + 1, group + 1 + c);
      }
    }
  });
  // The groups in order, per channel.
  pool.ParallelFor(c, kMergeGrain, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    std::vector<double> total(static_cast<size_t>(1 + 2 * n), 0.0);  // as a group: count, means, sums
    for (int64_t g = 0; g < groups; ++g) {
      const double* group = &partials[g * group_size];
      Merge(n, group[0], group + 1 + begin, group + 1 + c + begin, total[0], &total[1], &total[1 + n]);
    }
    for (int64_t j = 0; j < n; ++j) {
      mean[begin + j] = static_cast<float>(total[1 + j]);
      var[begin + j] = static_cast<float>(total[1 + n + j] / total[0]);
    }
  });
}

void BatchNormNhwcApply(const float* x, int64_t rows, int64_t c, const float* scale, const float* shift,
                        const float* addend, bool relu, float* y, ThreadPool& pool) {
  pool.ParallelFor(rows, ApplyGrain(c),
                   [&](int64_t begin, int64_t end) { ApplyRows(x, c, scale, shift, addend, relu, y, begin, end); });
}

void RunBatchNormNhwcBackward(const BatchNormNhwcBackward& b, ThreadPool& pool) {
  const Chunks ch(b.rows, b.c);
  const bool masked = b.relu_scale != nullptr;
  const int64_t c = b.c;
  // Per group: c sums of grad_y, then c of grad_y * (x - mean).
  const int64_t groups = ch.groups();
  const std::unique_ptr<double[]> partials(new double[static_cast<size_t>(groups * 2 * c)]);  // zeroed per group
  pool.ParallelFor(groups, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> chunk(static_cast<size_t>(2 * c));
    for (int64_t g = begin; g < end; ++g) {
      double* group = &partials[g * 2 * c];
      std::fill(group, group + 2 * c, 0.0);
      for (int64_t k = ch.group_begin(g); k < ch.group_end(g); ++k) {
        (masked ? ChunkGradSums<true> : ChunkGradSums<false>)(b, ch, k, chunk.data(), chunk.data() + c);
        for (int64_t j = 0; j < 2 * c; ++j) group[j] += chunk[j];
      }
    }
  });
  std::vector<float> k(static_cast<size_t>(c)), a(static_cast<size_t>(c), 0.0f), q(static_cast<size_t>(c), 0.0f);
  const double count = static_cast<double>(b.rows);
  pool.ParallelFor(c, kMergeGrain, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      double sum_g = 0, sum_gx = 0;  // the groups in order
      for (int64_t g = 0; g < groups; ++g) {
        sum_g += partials[g * 2 * c + j];
        sum_gx += partials[g * 2 * c + c + j];
      }
      const double invstd = 1 / std::sqrt(static_cast<double>(b.var[j]) + b.eps);
      b.grad_bias[j] = static_cast<float>(sum_g);
      b.grad_weight[j] = static_cast<float>(sum_gx * invstd);
      k[j] = static_cast<float>((b.weight != nullptr ? b.weight[j] : 1.0) * invstd);
      if (b.training) {
        a[j] = static_cast<float>(sum_g / count);
        q[j] = static_cast<float>(invstd * invstd * sum_gx / count);
      }
    }
  });
  pool.ParallelFor(b.rows, ApplyGrain(c), [&](int64_t begin, int64_t end) {
    (masked ? GradX<true> : GradX<false>)(b, k.data(), a.data(), q.data(), begin, end);
  });
}

#else  // no AVX2 kernels on other architectures

bool BatchNormNhwcRuns(int64_t) { return false; }
void BatchNormNhwcStats(const float*, int64_t, int64_t, float*, float*, ThreadPool&) {}
void BatchNormNhwcApply(const float*, int64_t, int64_t, const float*, const float*, const float*, bool, float*,
                        ThreadPool&) {}
void RunBatchNormNhwcBackward(const BatchNormNhwcBackward&, ThreadPool&) {}

#endif

}  // namespace oneflow::cpu
