// Winograd F(2x2, 3x3) convolutions (see winograd.h, Note [Winograd convolutions]).
//
// Every pass works on blocks of output tiles (2x2 outputs each). A block's transformed tiles are kept as
// 16 matrices, one per position of the 4x4 transformed tile, each (tiles x channels) with the channels
// contiguous: the transforms run on a vector of channels at once (8 or 16), and the products are plain
// matrix products.
#include "core/ops/cpu/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/ops/cpu/x86_simd.h"

namespace oneflow::cpu {

#if defined(__x86_64__)
namespace {

constexpr int kPositions = 16;  // a transformed tile is 4x4
constexpr int kRows = 6;        // blocks of tiles are a multiple of it (AVX2's register block of the products)

// A forward convolution as the passes see it: `in` (n, ih, iw, ci) to `out` (n, oh, ow, co), both NHWC;
// output (y, x) reads the input window whose top left is (y - pt, x - pl). The backward data is one too.
struct Pass {
  int64_t n, ih, iw, ci, oh, ow, co, pt, pl;
  int64_t tiles_y() const { return (oh + 1) / 2; }
  int64_t tiles_x() const { return (ow + 1) / 2; }
  int64_t tiles() const { return n * tiles_y() * tiles_x(); }
};

// Tiles per block of the forward passes: the block's transformed input and output (16 * tiles * (ci +
// co) floats) in about 192 KiB, so they stay in the L2 cache between the transforms and the products; a
// multiple of kRows. With many channels that is few tiles, and every block reads all 16 * ci * co
// transformed weights: then at least kMinTiles tiles, as long as every thread still gets a block, split
// evenly.
int64_t TilesPerBlock(const Pass& p, int64_t threads) {
  constexpr int64_t kMinTiles = 48;
  const int64_t fit = 192 * 1024 / int64_t{sizeof(float)} / (kPositions * (p.ci + p.co));
  const int64_t tiles = p.tiles(), share = (tiles + threads - 1) / threads;
  if (fit >= kMinTiles || share <= fit) return std::clamp<int64_t>(fit / kRows * kRows, kRows, 16 * kRows);
  int64_t blocks = (tiles + kMinTiles - 1) / kMinTiles;
  blocks = (blocks + threads - 1) / threads * threads;
  return (tiles + blocks - 1) / blocks;
}

// Tiles per block of the weight gradient. Its products add each block's tiles into the 16 * ci * co sums
// of the thread's part, which are loaded and stored again for every block: where they outgrow the L2
// cache (1 MiB and more: 128 channels in and out; 4 MiB at 256), short blocks spend much of the products
// on them. There each part takes its tiles in as few blocks as keep the block's transformed input and
// output gradient (16 * tiles * (ci + co) floats) within 4 MiB (the thread's scratch buffers grow to
// that), split evenly: 8-13% less time than TilesPerBlock's at 128 and 256 channels, 4 and 16 images (2
// threads of an AVX-512 EPYC; 2 MiB gained less at 256 channels, 8 MiB no more). With smaller sums the
// blocks stay TilesPerBlock's, which keep the block in L2 between the transforms and the products: the
// large ones, faster on warm data at 64 channels, took 5-22% longer in the main job's training step
// (16 to 64 channels, cold data).
int64_t WeightGradientTilesPerBlock(const Pass& p, int64_t threads) {
  if (kPositions * p.ci * p.co * int64_t{sizeof(float)} < (int64_t{1} << 20)) return TilesPerBlock(p, threads);
  const int64_t most =
      std::max<int64_t>(kRows, 4 * 1024 * 1024 / int64_t{sizeof(float)} / (kPositions * (p.ci + p.co)));
  const int64_t share = (p.tiles() + threads - 1) / threads, blocks = (share + most - 1) / most;
  return (share + blocks - 1) / blocks;
}

// The calling thread's buffer of at least `floats` floats (reused across calls).
float* Scratch(std::vector<float>& buffer, int64_t floats) {
  if (static_cast<int64_t>(buffer.size()) < floats) buffer.resize(floats);
  return buffer.data();
}

// Note [One kernel for two vector widths]
// The tile transforms and the products are written once, on GCC's vector extensions (Vec8, Vec16:
// operators, no intrinsics; unaligned loads and stores are memcpy's of a vector's bytes), and compiled
// twice: the members of Avx2Kernels and Avx512Kernels carry the target attributes and `flatten`, which
// inlines the whole kernel into each (helpers and always_inline lambdas included), so each copy is code
// generated for its own instruction set (a target attribute cannot be a template parameter). On CPUs that
// split 512-bit operations in two (AMD's Zen 4) both widths have the same FMA throughput, and the wider
// kernels still save loads, broadcasts and adds (up to 10% per convolution, most at 128 and 256
// channels); on CPUs with two 512-bit FMA units they do twice the work per cycle.
typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec16 __attribute__((vector_size(64)));

// Loads and stores of a vector at unaligned addresses.
template <typename V>
[[gnu::always_inline]] inline void Load(V& v, const float* p) {
  __builtin_memcpy(&v, p, sizeof v);
}
template <typename V>
[[gnu::always_inline]] inline void Store(float* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// Floats from one position's matrix of a block of nt tiles to the next one's: nt * channels, and one
// cache line more. Without it the 16 rows that a tile's transform stores (or loads) lay a multiple of 4 KiB
// apart wherever nt * channels is a multiple of 1024 (64 channels, 48 tiles: all 16) or of 512 (16
// channels, 96 tiles: every other one), where the CPU takes them for one address until it has compared
// all their bits (4K aliasing) and their cache lines share a set of the L1 cache: the passes took 10-15%
// longer there at 64 channels, 8-20% at 16. The transformed weights (and the weight gradient's sums) are
// 16 matrices of a x b kernels laid out the same way, Stride(a, b) floats apart.
inline int64_t Stride(int64_t nt, int64_t channels) { return nt * channels + 16; }

// ---- transforms -------------------------------------------------------------------------------------

// The tile's image, and the top left of its output in the image; Next moves to the following tile.
struct TileAt {
  int64_t image, y, x;
};
TileAt Locate(const Pass& p, int64_t tile) {
  const int64_t per_image = p.tiles_y() * p.tiles_x(), r = tile % per_image;
  return {tile / per_image, r / p.tiles_x() * 2, r % p.tiles_x() * 2};
}
void Next(const Pass& p, TileAt& at) {
  if ((at.x += 2) < p.ow) return;
  at.x = 0;
  if ((at.y += 2) < p.oh) return;
  at.y = 0;
  ++at.image;
}

// Calls fn(c, std::type_identity<V>) for c = 0, L, 2L, ... while a whole vector V of L lanes fits in
// `channels`, then fn(c, std::type_identity<Vec8>) for the last 8 (channels are a multiple of 8). fn is
// always_inline: inlined into the flattened kernel, never a copy compiled for the default target.
template <typename V, typename Fn>
[[gnu::always_inline]] inline void ForEachVector(int64_t channels, Fn&& fn) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  int64_t c = 0;
  for (; c + L <= channels; c += L) fn(c, std::type_identity<V>{});
  if constexpr (L > 8) {
    if (c < channels) fn(c, std::type_identity<Vec8>{});
  }
}

// v[16][nt][ci] = B^T d B for the input tiles d of tiles [t0, t0 + nt) (zero outside the input), where
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
template <typename V>
void TransformInput(const Pass& p, const float* in, int64_t t0, int64_t nt, float* v) {
  const int64_t position_stride = Stride(nt, p.ci);
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const int64_t y0 = at.y - p.pt, x0 = at.x - p.pl;
    const float* image = in + at.image * p.ih * p.iw * p.ci;
    const bool inside = y0 >= 0 && x0 >= 0 && y0 + 4 <= p.ih && x0 + 4 <= p.iw;
    bool valid[4][4];
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        valid[i][j] = inside || (y0 + i >= 0 && y0 + i < p.ih && x0 + j >= 0 && x0 + j < p.iw);
      }
    }
    ForEachVector<V>(
        p.ci, [&](int64_t c, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          W d[4][4];
          for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 4; ++j) {
              d[i][j] = W{};
              if (valid[i][j]) Load(d[i][j], image + ((y0 + i) * p.iw + x0 + j) * p.ci + c);
            }
          }
          W e[4][4];  // B^T d
          for (int j = 0; j < 4; ++j) {
            e[0][j] = d[0][j] - d[2][j];
            e[1][j] = d[1][j] + d[2][j];
            e[2][j] = d[2][j] - d[1][j];
            e[3][j] = d[1][j] - d[3][j];
          }
          float* out = v + t * p.ci + c;
          for (int i = 0; i < 4; ++i) {  // (B^T d) B
            Store(out + (4 * i + 0) * position_stride, e[i][0] - e[i][2]);
            Store(out + (4 * i + 1) * position_stride, e[i][1] + e[i][2]);
            Store(out + (4 * i + 2) * position_stride, e[i][2] - e[i][1]);
            Store(out + (4 * i + 3) * position_stride, e[i][1] - e[i][3]);
          }
        });
  }
}

// out = A^T m A (+ bias) for the tiles [t0, t0 + nt) of m[16][nt][co], the outputs inside `out` only, where
//   A^T = [1 1 1 0; 0 1 -1 -1].
template <typename V>
void TransformOutput(const Pass& p, const float* m, int64_t t0, int64_t nt, const float* bias, float* out) {
  const int64_t position_stride = Stride(nt, p.co);
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const int64_t rows = std::min<int64_t>(2, p.oh - at.y), cols = std::min<int64_t>(2, p.ow - at.x);
    float* image = out + at.image * p.oh * p.ow * p.co;
    ForEachVector<V>(
        p.co, [&](int64_t k, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          const float* in = m + t * p.co + k;
          W s[2][4];  // A^T m
          for (int j = 0; j < 4; ++j) {
            W m0, m1, m2, m3;
            Load(m0, in + (0 + j) * position_stride);
            Load(m1, in + (4 + j) * position_stride);
            Load(m2, in + (8 + j) * position_stride);
            Load(m3, in + (12 + j) * position_stride);
            s[0][j] = m0 + m1 + m2;
            s[1][j] = m1 - m2 - m3;
          }
          W b{};
          if (bias) Load(b, bias + k);
          for (int i = 0; i < rows; ++i) {  // (A^T m) A
            float* row = image + ((at.y + i) * p.ow + at.x) * p.co + k;
            Store(row, s[i][0] + s[i][1] + s[i][2] + b);
            if (cols == 2) Store(row + p.co, s[i][1] - s[i][2] - s[i][3] + b);
          }
        });
  }
}

// w[16][nt][co] = A g A^T for the output-gradient tiles g of tiles [t0, t0 + nt) (zero outside the
// output): the gradient of the output transform.
template <typename V>
void TransformOutputGrad(const Pass& p, const float* dy, int64_t t0, int64_t nt, float* w) {
  const int64_t position_stride = Stride(nt, p.co);
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const int64_t rows = std::min<int64_t>(2, p.oh - at.y), cols = std::min<int64_t>(2, p.ow - at.x);
    const float* image = dy + at.image * p.oh * p.ow * p.co;
    ForEachVector<V>(
        p.co, [&](int64_t k, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          W g[2][2];
          for (int i = 0; i < 2; ++i) {
            for (int j = 0; j < 2; ++j) {
              g[i][j] = W{};
              if (i < rows && j < cols) Load(g[i][j], image + ((at.y + i) * p.ow + at.x + j) * p.co + k);
            }
          }
          W e[4][2];  // A g, A = [1 0; 1 1; 1 -1; 0 -1]
          for (int j = 0; j < 2; ++j) {
            e[0][j] = g[0][j];
            e[1][j] = g[0][j] + g[1][j];
            e[2][j] = g[0][j] - g[1][j];
            e[3][j] = -g[1][j];
          }
          float* out = w + t * p.co + k;
          for (int i = 0; i < 4; ++i) {  // (A g) A^T
            Store(out + (4 * i + 0) * position_stride, e[i][0]);
            Store(out + (4 * i + 1) * position_stride, e[i][0] + e[i][1]);
            Store(out + (4 * i + 2) * position_stride, e[i][0] - e[i][1]);
            Store(out + (4 * i + 3) * position_stride, -e[i][1]);
          }
        });
  }
}

// Transposes the 8 x 8 floats of r: lane j of r[i] goes to lane i of r[j].
OF_AVX2 inline void Transpose8x8(__m256 r[8]) {
  __m256 t[8], q[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    q[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    q[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    q[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    q[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(q[i], q[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(q[i], q[i + 4], 0x31);
  }
}

// Note [Kernels to vectors without gathers]
// The weight transforms work on eight 3x3 kernels at once, one per lane, and the kernels lie 9 floats
// (or 9 * c) apart. Each kernel's first 8 taps are one unaligned load (or store) and an 8 x 8 transpose
// turns them into 8 vectors of one tap each; the ninth tap goes lane by lane. AVX2's gathers did this
// before, at about 8 cycles per vector on AMD's Zen 4, where the forward's weight transform then took 36%
// of the time of its products at 256 channels (perf, 4 x 256 x 14 x 14); 16% with the transposes, 8% with
// the 16 matrices of transformed weights also Stride() apart (o * c floats apart, they shared L1 sets).
// The weight gradient's inverse transform, the same way: 27% -> 17%. ResNet-50's Winograd convolutions
// at batch 4: 79-81 -> 77.4-77.7 ms per training step.

// The taps of the 8 kernels at k, k + stride, ..., k + 7 stride: taps[t] holds tap t of kernel `lane` in
// lane `lane`.
OF_AVX2 inline void LoadKernels(const float* k, int64_t stride, __m256 taps[9]) {
  alignas(32) float last[8];
  for (int lane = 0; lane < 8; ++lane) {
    taps[lane] = _mm256_loadu_ps(k + lane * stride);
    last[lane] = k[lane * stride + 8];
  }
  Transpose8x8(taps);
  taps[8] = _mm256_load_ps(last);
}

// The inverse of LoadKernels: kernel `lane` (at k + lane * stride) gets lane `lane` of taps[0..8]. Changes
// taps.
OF_AVX2 inline void StoreKernels(__m256 taps[9], int64_t stride, float* k) {
  alignas(32) float last[8];
  _mm256_store_ps(last, taps[8]);
  Transpose8x8(taps);
  for (int lane = 0; lane < 8; ++lane) {
    _mm256_storeu_ps(k + lane * stride, taps[lane]);
    k[lane * stride + 8] = last[lane];
  }
}

// u[16][a][b] (positions Stride(a, b) apart) = G k G^T for the kernels k of weight (o, c, 3, 3),
// G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]. Forward: (a, b) = (c, o) and k the weight's kernel; backward
// data: (a, b) = (o, c) and k rotated by 180 degrees. Rows a in [begin, end), eight kernels at once,
// consecutive in b (a multiple of 8).
OF_AVX2 void TransformWeights(const float* weight, int64_t o, int64_t c, bool backward_data, int64_t begin, int64_t end,
                              float* u) {
  const int64_t cols = backward_data ? c : o, position_stride = Stride(o, c);
  // Kernel (a, b) starts at weight + 9 * (a * c + b) (backward data) or 9 * (b * c + a) (forward).
  const int64_t lane_stride = backward_data ? 9 : 9 * c, row_stride = backward_data ? 9 * c : 9;
  const __m256 half = _mm256_set1_ps(0.5f);
  for (int64_t a = begin; a < end; ++a) {
    for (int64_t b = 0; b < cols; b += 8) {
      __m256 taps[9];
      LoadKernels(weight + a * row_stride + b * lane_stride, lane_stride, taps);
      __m256 k[3][3];
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) k[i][j] = taps[backward_data ? (2 - i) * 3 + 2 - j : i * 3 + j];
      }
      __m256 gk[4][3];  // G k
      for (int j = 0; j < 3; ++j) {
        gk[0][j] = k[0][j];
        gk[1][j] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(k[0][j], k[1][j]), k[2][j]));
        gk[2][j] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(k[0][j], k[1][j]), k[2][j]));
        gk[3][j] = k[2][j];
      }
      float* out = u + a * cols + b;
      for (int i = 0; i < 4; ++i) {  // (G k) G^T
        const __m256 row[4] = {
            gk[i][0], _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(gk[i][0], gk[i][1]), gk[i][2])),
            _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(gk[i][0], gk[i][1]), gk[i][2])), gk[i][2]};
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(out + (4 * i + j) * position_stride, row[j]);
      }
    }
  }
}

// weight (o, c, 3, 3) = G^T z G for z the sum of `parts` arrays z_p[16][c][o] (`part_stride` apart, their
// positions Stride(c, o) apart), the weight gradient's inverse transform, where G^T = [1 .5 .5 0; 0 .5 -.5
// 0; 0 .5 .5 1]. Eight kernels at once, consecutive in o (a multiple of 8), for the input channels ci in
// [begin, end).
OF_AVX2 void InverseTransformWeights(const float* z, int64_t parts, int64_t part_stride, int64_t o, int64_t c,
                                     int64_t begin, int64_t end, float* weight) {
  const __m256 half = _mm256_set1_ps(0.5f);
  for (int64_t ci = begin; ci < end; ++ci) {
    for (int64_t oi = 0; oi < o; oi += 8) {
      __m256 t[4][4];
      for (int i = 0; i < 16; ++i) {
        const float* at = z + i * Stride(c, o) + ci * o + oi;
        __m256 sum = _mm256_loadu_ps(at);
        for (int64_t part = 1; part < parts; ++part) sum = _mm256_add_ps(sum, _mm256_loadu_ps(at + part * part_stride));
        t[i / 4][i % 4] = sum;
      }
      __m256 r[3][4];  // G^T z
      for (int j = 0; j < 4; ++j) {
        const __m256 mid = _mm256_mul_ps(half, _mm256_add_ps(t[1][j], t[2][j]));
        r[0][j] = _mm256_add_ps(t[0][j], mid);
        r[1][j] = _mm256_mul_ps(half, _mm256_sub_ps(t[1][j], t[2][j]));
        r[2][j] = _mm256_add_ps(mid, t[3][j]);
      }
      __m256 taps[9];  // (G^T z) G, tap by tap
      for (int i = 0; i < 3; ++i) {
        const __m256 mid = _mm256_mul_ps(half, _mm256_add_ps(r[i][1], r[i][2]));
        taps[i * 3 + 0] = _mm256_add_ps(r[i][0], mid);
        taps[i * 3 + 1] = _mm256_mul_ps(half, _mm256_sub_ps(r[i][1], r[i][2]));
        taps[i * 3 + 2] = _mm256_add_ps(mid, r[i][3]);
      }
      StoreKernels(taps, 9 * c, weight + (oi * c + ci) * 9);
    }
  }
}

// Rows of kernels per thread in the weight transforms, for rows of `columns` kernels: at least 8192
// kernels (tens of microseconds), so that a small transform does not wake the pool's threads.
int64_t WeightRowsPerChunk(int64_t columns) { return std::max<int64_t>(1, 8192 / columns); }

// ---- products ---------------------------------------------------------------------------------------

// c[R][L NV] (=, or += with Accumulate) sum over d < depth of a(r, d) * b[d][L NV], for vectors V of L
// lanes, where a(r, d) is a[r * a_row + d * a_depth] and rows of b and c are ldb and ldc apart: R x NV
// vectors of results in registers.
template <typename V, int R, int NV, bool Accumulate>
void MultiplyBlock(const float* a, int64_t a_row, int64_t a_depth, const float* b, int64_t ldb, float* c, int64_t ldc,
                   int64_t depth) {
  constexpr int L = sizeof(V) / sizeof(float);
  V acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      acc[r][j] = V{};
      if (Accumulate) Load(acc[r][j], c + r * ldc + L * j);
    }
  }
  for (int64_t d = 0; d < depth; ++d) {
    V bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) Load(bv[j], b + d * ldb + L * j);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float av = a[r * a_row + d * a_depth];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[r][j] += av * bv[j];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) Store(c + r * ldc + L * j, acc[r][j]);
  }
}

// MultiplyBlock for 1 to R rows (`rows`).
template <typename V, int R, int NV, bool Accumulate>
void MultiplyRows(int rows, const float* a, int64_t a_row, int64_t a_depth, const float* b, int64_t ldb, float* c,
                  int64_t ldc, int64_t depth) {
  if constexpr (R > 1) {
    if (rows < R) return MultiplyRows<V, R - 1, NV, Accumulate>(rows, a, a_row, a_depth, b, ldb, c, ldc, depth);
  }
  MultiplyBlock<V, R, NV, Accumulate>(a, a_row, a_depth, b, ldb, c, ldc, depth);
}

// c (m x n, rows n apart) (= or +=) a * b for a(r, d) = a[r * a_row + d * a_depth] (m x depth) and b
// (depth x n, rows n apart); n a multiple of 8. Blocks of R rows and two vectors V of columns; the last
// columns in one V, then in one Vec8.
template <typename V, int R, bool Accumulate>
void MultiplyPanels(int64_t m, int64_t n, int64_t depth, const float* a, int64_t a_row, int64_t a_depth, const float* b,
                    float* c) {
  constexpr int64_t L = sizeof(V) / sizeof(float), kColumns = 2 * L;
  // Columns in panels of b of at most 128 KiB, which stay in the L2 cache while every row passes.
  const int64_t panel = std::max<int64_t>(kColumns, 32 * 1024 / depth / kColumns * kColumns);
  for (int64_t k0 = 0; k0 < n; k0 += panel) {
    for (int64_t r = 0; r < m; r += R) {
      const int rows = static_cast<int>(std::min<int64_t>(R, m - r));
      const float* ar = a + r * a_row;
      for (int64_t k = k0; k < std::min(n, k0 + panel);) {
        float* ck = c + r * n + k;
        if (k + kColumns <= n) {
          MultiplyRows<V, R, 2, Accumulate>(rows, ar, a_row, a_depth, b + k, n, ck, n, depth);
          k += kColumns;
        } else if (k + L <= n) {
          MultiplyRows<V, R, 1, Accumulate>(rows, ar, a_row, a_depth, b + k, n, ck, n, depth);
          k += L;
        } else {
          MultiplyRows<Vec8, R, 1, Accumulate>(rows, ar, a_row, a_depth, b + k, n, ck, n, depth);
          k += 8;
        }
      }
    }
  }
}

// The kernels of one vector width, each a copy for its instruction set (Note [One kernel for two vector
// widths]). Products: 6 x 16 results in 12 of AVX2's 16 registers; 12 x 32 in 24 of AVX-512's 32.
#define OF_WINOGRAD_KERNELS(Name, Target, V, R)                                                                      \
  struct Name {                                                                                                      \
    static Target __attribute__((flatten)) void Input(const Pass& p, const float* in, int64_t t0, int64_t nt,        \
                                                      float* v) {                                                    \
      TransformInput<V>(p, in, t0, nt, v);                                                                           \
    }                                                                                                                \
    static Target __attribute__((flatten)) void Output(const Pass& p, const float* m, int64_t t0, int64_t nt,        \
                                                       const float* bias, float* out) {                              \
      TransformOutput<V>(p, m, t0, nt, bias, out);                                                                   \
    }                                                                                                                \
    static Target __attribute__((flatten)) void OutputGrad(const Pass& p, const float* dy, int64_t t0, int64_t nt,   \
                                                           float* w) {                                               \
      TransformOutputGrad<V>(p, dy, t0, nt, w);                                                                      \
    }                                                                                                                \
    template <bool Accumulate>                                                                                       \
    static Target __attribute__((flatten)) void Multiply(int64_t m, int64_t n, int64_t depth, const float* a,        \
                                                         int64_t a_row, int64_t a_depth, const float* b, float* c) { \
      MultiplyPanels<V, R, Accumulate>(m, n, depth, a, a_row, a_depth, b, c);                                        \
    }                                                                                                                \
  };
OF_WINOGRAD_KERNELS(Avx2Kernels, OF_AVX2, Vec8, 6)
OF_WINOGRAD_KERNELS(Avx512Kernels, OF_AVX512, Vec16, 12)
#undef OF_WINOGRAD_KERNELS

// OF_WINOGRAD in the environment (winograd.h): "0", "avx2" or empty.
const std::string& Setting() {
  static const std::string setting = std::getenv("OF_WINOGRAD") ? std::getenv("OF_WINOGRAD") : "";
  return setting;
}

// Whether the passes run Avx512Kernels: where the CPU has AVX-512, unless OF_WINOGRAD=avx2 (so that the
// tests reach both sets on an AVX-512 CPU).
bool WideVectors() {
  static const bool wide = HasAvx512() && Setting() != "avx2";
  return wide;
}

// ---- passes -----------------------------------------------------------------------------------------

// TransformWeights over all rows, on the pool: u[16][a][b] as TransformWeights describes.
std::unique_ptr<float[]> TransformedWeights(const float* weight, int64_t o, int64_t c, bool backward_data,
                                            ThreadPool& pool) {
  std::unique_ptr<float[]> u(new float[kPositions * Stride(o, c)]);
  const int64_t rows = backward_data ? o : c, columns = backward_data ? c : o;
  pool.ParallelFor(rows, WeightRowsPerChunk(columns), [&](int64_t begin, int64_t end) {
    TransformWeights(weight, o, c, backward_data, begin, end, u.get());
  });
  return u;
}

// out = the convolution of `in` with transformed weights u[16][ci][co] (+ bias), on kernels K.
template <typename K>
void RunForward(const Pass& p, const float* in, const float* u, const float* bias, float* out, ThreadPool& pool) {
  const int64_t tiles = p.tiles(), per_block = TilesPerBlock(p, pool.num_threads()),
                blocks = (tiles + per_block - 1) / per_block;
  pool.ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> v_buffer, m_buffer;
    float* v = Scratch(v_buffer, kPositions * Stride(per_block, p.ci));
    float* m = Scratch(m_buffer, kPositions * Stride(per_block, p.co));
    for (int64_t block = begin; block < end; ++block) {
      const int64_t t0 = block * per_block, nt = std::min(per_block, tiles - t0);
      K::Input(p, in, t0, nt, v);
      for (int xi = 0; xi < kPositions; ++xi) {
        K::template Multiply<false>(nt, p.co, p.ci, v + xi * Stride(nt, p.ci), p.ci, 1, u + xi * Stride(p.ci, p.co),
                                    m + xi * Stride(nt, p.co));
      }
      K::Output(p, m, t0, nt, bias, out);
    }
  });
}

// dw = the weight gradient, on kernels K.
template <typename K>
void RunBackwardWeight(const Winograd3x3& s, const float* x, const float* dy, float* dw, ThreadPool& pool) {
  const Pass p{s.n, s.h, s.w, s.c, s.oh, s.ow, s.o, s.pad_top, s.pad_left};
  const int64_t tiles = p.tiles(), per_block = WeightGradientTilesPerBlock(p, pool.num_threads()),
                blocks = (tiles + per_block - 1) / per_block;
  // Each part sums its share of the blocks into its own z[16][c][o] (its first block overwrites it); the
  // inverse transform adds the parts in order.
  const int64_t parts = std::min<int64_t>(pool.num_threads(), blocks), z_size = kPositions * Stride(s.c, s.o);
  const std::unique_ptr<float[]> z(new float[parts * z_size]);
  pool.ParallelFor(parts, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> v_buffer, g_buffer;
    float* v = Scratch(v_buffer, kPositions * Stride(per_block, p.ci));
    float* g = Scratch(g_buffer, kPositions * Stride(per_block, p.co));
    for (int64_t part = begin; part < end; ++part) {
      float* zp = z.get() + part * z_size;
      const int64_t first = blocks * part / parts;
      for (int64_t block = first; block < blocks * (part + 1) / parts; ++block) {
        const int64_t t0 = block * per_block, nt = std::min(per_block, tiles - t0);
        K::Input(p, x, t0, nt, v);
        K::OutputGrad(p, dy, t0, nt, g);
        for (int xi = 0; xi < kPositions; ++xi) {  // z[xi] (c x o) (+)= v[xi]^T (c x nt) g[xi] (nt x o)
          const auto multiply = block == first ? K::template Multiply<false> : K::template Multiply<true>;
          multiply(p.ci, p.co, nt, v + xi * Stride(nt, p.ci), 1, p.ci, g + xi * Stride(nt, p.co),
                   zp + xi * Stride(p.ci, p.co));
        }
      }
    }
  });
  pool.ParallelFor(s.c, WeightRowsPerChunk(s.o), [&](int64_t begin, int64_t end) {
    InverseTransformWeights(z.get(), parts, z_size, s.o, s.c, begin, end, dw);
  });
}

}  // namespace

bool WinogradRuns(const Winograd3x3& s) {
  const int64_t pad_bottom = s.oh + 2 - s.h - s.pad_top, pad_right = s.ow + 2 - s.w - s.pad_left;
  const auto padding_ok = [](int64_t p) { return p >= 0 && p <= 2; };
  // Measured faster than oneDNN's direct kernels from 16 to 256 channels (bench/README.md). At 512
  // (ResNet-50's last stage, 7x7) they are slower: the 16 MiB of transformed weights (and of weight
  // gradient sums) outgrow the L2 caches, and 7x7 images fill 8x8 outputs' worth of tiles.
  const auto channels_ok = [](int64_t c) { return c % 8 == 0 && c >= 16 && c <= 256; };
  return HasAvx2Fma() && Setting() != "0" && channels_ok(s.c) && channels_ok(s.o) && padding_ok(s.pad_top) &&
         padding_ok(s.pad_left) && padding_ok(pad_bottom) && padding_ok(pad_right) && s.n * s.oh * s.ow >= 64;
}

void WinogradForward(const Winograd3x3& s, const float* x, const float* w, const float* bias, float* y,
                     ThreadPool& pool) {
  const std::unique_ptr<float[]> u = TransformedWeights(w, s.o, s.c, /*backward_data=*/false, pool);
  const Pass p{s.n, s.h, s.w, s.c, s.oh, s.ow, s.o, s.pad_top, s.pad_left};
  (WideVectors() ? RunForward<Avx512Kernels> : RunForward<Avx2Kernels>)(p, x, u.get(), bias, y, pool);
}

void WinogradBackwardData(const Winograd3x3& s, const float* dy, const float* w, float* dx, ThreadPool& pool) {
  const std::unique_ptr<float[]> u = TransformedWeights(w, s.o, s.c, /*backward_data=*/true, pool);
  // dx[y] sums dy[y + pad_top - i] w[i]: a convolution of dy with the rotated kernel and padding 2 - pad.
  const Pass p{s.n, s.oh, s.ow, s.o, s.h, s.w, s.c, 2 - s.pad_top, 2 - s.pad_left};
  (WideVectors() ? RunForward<Avx512Kernels> : RunForward<Avx2Kernels>)(p, dy, u.get(), nullptr, dx, pool);
}

void WinogradBackwardWeight(const Winograd3x3& s, const float* x, const float* dy, float* dw, ThreadPool& pool) {
  (WideVectors() ? RunBackwardWeight<Avx512Kernels> : RunBackwardWeight<Avx2Kernels>)(s, x, dy, dw, pool);
}

#else  // no AVX2 kernels on other architectures

bool WinogradRuns(const Winograd3x3&) { return false; }
void WinogradForward(const Winograd3x3&, const float*, const float*, const float*, float*, ThreadPool&) {}
void WinogradBackwardData(const Winograd3x3&, const float*, const float*, float*, ThreadPool&) {}
void WinogradBackwardWeight(const Winograd3x3&, const float*, const float*, float*, ThreadPool&) {}

#endif

}  // namespace oneflow::cpu
