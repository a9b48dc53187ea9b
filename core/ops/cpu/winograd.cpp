// Winograd F(2x2, 3x3) convolutions (see winograd.h, Note [Winograd convolutions]).
//
// Every pass works on blocks of output tiles (2x2 outputs each), one thread's each, or on spans of them that
// the threads share (Note [Winograd passes by position]). A block's transformed tiles are kept as
// 16 matrices, one per position of the 4x4 transformed tile, each (tiles x channels) with the channels
// contiguous: the transforms run on a vector of channels at once (8 or 16), and the products are plain
// matrix products.
#include "core/ops/cpu/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/ops/cpu/x86_simd.h"
#include "core/ops/dnnl/sgemm.h"

namespace oneflow::cpu {

#if defined(__x86_64__)
namespace {

constexpr int kPositions = 16;  // a transformed tile of stride 1 is 4x4, the weights' 16 matrices too
constexpr int kRows = 6;        // blocks of tiles are a multiple of it (AVX2's register block of the products)

// A convolution as the passes see it: `in` (n, ih, iw, ci) to `out` (n, oh, ow, co), both NHWC, in tiles
// of 2 x 2 on a grid. Stride 1: output (y, x) reads the input window whose top left is (y - pt, x - pl),
// the grid is the output's; the backward data is such a convolution too. Stride 2 (Note [Winograd
// convolutions of stride 2]): the forward and the weight gradient tile the output likewise (window (2y -
// pt, 2x - pl)); the backward data (`phases`, pt and pl the convolution's padding) tiles the grid of
// out = dx's 2 x 2 blocks: grid position (y, x) is dx's (2y, 2x) to (2y + 1, 2x + 1).
struct Pass {
  int64_t n, ih, iw, ci, oh, ow, co, pt, pl;
  bool phases = false;
  int64_t grid_h() const { return phases ? (oh + 1) / 2 : oh; }
  int64_t grid_w() const { return phases ? (ow + 1) / 2 : ow; }
  int64_t tiles_y() const { return (grid_h() + 1) / 2; }
  int64_t tiles_x() const { return (grid_w() + 1) / 2; }
  int64_t tiles() const { return n * tiles_y() * tiles_x(); }
};

// The pass over the output tiles of `s`: the forward's and the weight gradient's.
Pass OutputPass(const Winograd3x3& s) { return {s.n, s.h, s.w, s.c, s.oh, s.ow, s.o, s.pad_top, s.pad_left}; }

// Tiles per block of the forward passes, for tiles of `positions` positions (16, or 25 of stride 2): the
// block's transformed input and output (positions * tiles * (ci + co) floats) in about 192 KiB, so they
// stay in the L2 cache between the transforms and the products; a multiple of kRows. With many channels
// that is few tiles, and every block reads all 16 * ci * co transformed weights: then at least kMinTiles
// tiles, as long as every thread still gets a block, split evenly.
int64_t TilesPerBlock(const Pass& p, int64_t positions, int64_t threads) {
  constexpr int64_t kMinTiles = 48;
  const int64_t fit = 192 * 1024 / int64_t{sizeof(float)} / (positions * (p.ci + p.co));
  const int64_t tiles = p.tiles(), share = (tiles + threads - 1) / threads;
  if (fit >= kMinTiles || share <= fit) return std::clamp<int64_t>(fit / kRows * kRows, kRows, 16 * kRows);
  int64_t blocks = (tiles + kMinTiles - 1) / kMinTiles;
  blocks = (blocks + threads - 1) / threads * threads;
  return (tiles + blocks - 1) / blocks;
}

// Tiles per block of the weight gradient. Its products add each block's tiles into the 16 * ci * co sums
// of the thread's part, which are loaded and stored again for every block: where they outgrow the L2
// cache (1 MiB and more: 128 channels in and out; from 4 MiB the passes go by position instead, Note
// [Winograd passes by position]), short blocks spend much of the products on them. There each part
// takes its tiles in as few blocks as keep the block's transformed input and output gradient (positions
// * tiles * (ci + co) floats) within 4 MiB (the thread's scratch buffers grow to that), split evenly:
// 8-13% less time than TilesPerBlock's at 128 and 256 channels, 4 and 16 images (2 threads of an AVX-512
// EPYC; 2 MiB gained less at 256 channels, 8 MiB no more). With smaller sums the blocks stay
// TilesPerBlock's, which keep the block in L2 between the transforms and the products: the large ones,
// faster on warm data at 64 channels, took 5-22% longer in the main job's training step (16 to 64
// channels, cold data).
int64_t WeightGradientTilesPerBlock(const Pass& p, int64_t positions, int64_t threads) {
  if (kPositions * p.ci * p.co * int64_t{sizeof(float)} < (int64_t{1} << 20)) {
    return TilesPerBlock(p, positions, threads);
  }
  const int64_t most = std::max<int64_t>(kRows, 4 * 1024 * 1024 / int64_t{sizeof(float)} / (positions * (p.ci + p.co)));
  const int64_t share = (p.tiles() + threads - 1) / threads, blocks = (share + most - 1) / most;
  return (share + blocks - 1) / blocks;
}

// Note [Buffers aligned to a cache line]
// The passes' buffers (transformed weights, tiles, products, weight-gradient sums) start at a multiple of
// 64 bytes, and so, where the channels are a multiple of 16, do their matrices (Stride()) and rows: no
// vector load or store spans two cache lines. From operator new they started 16 bytes past a line (as
// large blocks from malloc do), and every 512-bit access touched two lines: the passes at 64 to 256
// channels took 1.5-3.5% longer forward and backward (ResNet-50's shapes at batch 4, 2 threads).
constexpr std::align_val_t kLineAlignment{64};
struct FreeAligned {
  void operator()(float* p) const { ::operator delete[](p, kLineAlignment); }
};
using AlignedFloats = std::unique_ptr<float[], FreeAligned>;
AlignedFloats NewAlignedFloats(int64_t floats) {
  return AlignedFloats(
      static_cast<float*>(::operator new[](static_cast<size_t>(floats) * sizeof(float), kLineAlignment)));
}

// A thread's buffer, reused across calls: Get(floats) returns at least that many.
struct ScratchBuffer {
  AlignedFloats data;
  int64_t size = 0;
  float* Get(int64_t floats) {
    if (size < floats) {
      data.reset();  // the old buffer goes first: both at once could exhaust memory
      size = 0;      // (and none is left if the new one cannot be had)
      data = NewAlignedFloats(floats);
      size = floats;
    }
    return data.get();
  }
};

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

// A stride-2 tile's 25 positions, by phase of the input (row, column parity), and the weight matrix each
// multiplies (16 in all, as many as stride 1's), in the order of their weights:
//   (even, even) 3 x 3 positions 0-8 (3 r + c), F(2x2, 2x2) of the taps (2i, 2j): weights 0-8 (3 r + c)
//   (even, odd)  3 x 2 positions 9-14 (9 + 2 r + j), F(2, 2) along rows of the taps (2i, 1): weights 9 + r
//   (odd, even)  2 x 3 positions 15-20 (15 + 2 c + i), F(2, 2) along columns of (1, 2j): weights 12 + c
//   (odd, odd)   2 x 2 positions 21-24 (21 + 2 i + j), the tap (1, 1) alone: weight 15
constexpr int kPhasePositions = 25;
constexpr int kPhaseWeight[kPhasePositions] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  9,  10, 10,
                                               11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 15, 15};

// Where position i of a block's tiles starts among its matrices of `plane` (tiles x channels) floats: the
// positions of one weight back to back (one matrix of all their rows for the products), each weight's
// group 16 floats (a cache line) after the previous one's (Stride()'s reason).
constexpr int64_t PhaseOffset(int i, int64_t plane) { return i * plane + kPhaseWeight[i] * 16; }

// The passes' kinds of tiles (tags of the transforms' overloads): their positions, the weight matrix each
// position multiplies (in order), and where a position's matrix starts in a block's of `plane` (tiles x
// channels) floats.
struct StrideOne {  // F(2x2, 3x3)
  static constexpr int kTilePositions = kPositions;
  static constexpr int Weight(int position) { return position; }
  static constexpr int64_t Offset(int position, int64_t plane) { return position * (plane + 16); }  // Stride()
};
struct StrideTwo {  // the forward and the weight gradient of stride 2, by phases
  static constexpr int kTilePositions = kPhasePositions;
  static constexpr int Weight(int position) { return kPhaseWeight[position]; }
  static constexpr int64_t Offset(int position, int64_t plane) { return PhaseOffset(position, plane); }
};
struct StrideTwoTransposed : StrideTwo {};  // the backward data of stride 2, over dx's blocks

// ---- transforms -------------------------------------------------------------------------------------
//
// A transform of the tiles [t0, t0 + nt) reads or writes them as rows 0 to nt - 1 of matrices of `rows`
// tiles (a position's matrix Stride(rows, channels) floats from the next one's): a block's own buffers
// (rows = nt), or its rows of matrices that hold every tile (Note [Winograd passes by position]).

// The tile's image, and its top left on the pass's grid; Next moves to the following tile.
struct TileAt {
  int64_t image, y, x;
};
TileAt Locate(const Pass& p, int64_t tile) {
  const int64_t per_image = p.tiles_y() * p.tiles_x(), r = tile % per_image;
  return {tile / per_image, r / p.tiles_x() * 2, r % p.tiles_x() * 2};
}
void Next(const Pass& p, TileAt& at) {
  if ((at.x += 2) < p.grid_w()) return;
  at.x = 0;
  if ((at.y += 2) < p.grid_h()) return;
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

// The N x N window of `in`'s image `image_index` with its top left at (y, x): which of its positions lie
// inside the image (found once per window), and their values for the vector of channels from c, zero
// outside (Load, per vector).
template <int N>
struct Window {
  const float* image;
  int64_t y0, x0, iw, channels;
  bool valid[N][N];
  Window(const Pass& p, const float* in, int64_t image_index, int64_t y, int64_t x)
      : image(in + image_index * p.ih * p.iw * p.ci), y0(y), x0(x), iw(p.iw), channels(p.ci) {
    const bool inside = y0 >= 0 && x0 >= 0 && y0 + N <= p.ih && x0 + N <= p.iw;
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) {
        valid[i][j] = inside || (y0 + i >= 0 && y0 + i < p.ih && x0 + j >= 0 && x0 + j < p.iw);
      }
    }
  }
  template <typename W>
  [[gnu::always_inline]] void Load(int64_t c, W (&d)[N][N]) const {
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) {
        d[i][j] = W{};
        if (valid[i][j]) oneflow::cpu::Load(d[i][j], image + ((y0 + i) * iw + x0 + j) * channels + c);
      }
    }
  }
};

// The 2 x 2 outputs of the tile at `at` of the output (n, oh, ow, co): how many rows and columns of them lie
// inside it (fewer at its bottom and right edges), where output (i, j)'s channels start (At), and their
// values in dy for the vector of channels from k, zero outside (Load).
struct OutputTile {
  int64_t rows, cols, ow, co, first;
  OutputTile(const Pass& p, const TileAt& at)
      : rows(std::min<int64_t>(2, p.oh - at.y)),
        cols(std::min<int64_t>(2, p.ow - at.x)),
        ow(p.ow),
        co(p.co),
        first(((at.image * p.oh + at.y) * p.ow + at.x) * p.co) {}
  int64_t At(int64_t i, int64_t j) const { return first + (i * ow + j) * co; }
  template <typename W>
  [[gnu::always_inline]] void Load(const float* dy, int64_t k, W (&g)[2][2]) const {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        g[i][j] = W{};
        if (i < rows && j < cols) oneflow::cpu::Load(g[i][j], dy + At(i, j) + k);
      }
    }
  }
};

// Calls fn(out, g) for each tile t of [t0, t0 + nt) and each vector of channels from k: g its 2 x 2 output
// gradients there (zero outside the output), out = w + t * co + k, where the transform stores them. fn is
// always_inline (ForEachVector's reason).
template <typename V, typename Fn>
[[gnu::always_inline]] inline void ForEachOutputGradTile(const Pass& p, const float* dy, int64_t t0, int64_t nt,
                                                         float* w, Fn&& fn) {
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const OutputTile tile(p, at);
    ForEachVector<V>(
        p.co, [&](int64_t k, auto lanes) __attribute__((always_inline)) {
          typename decltype(lanes)::type g[2][2];
          tile.Load(dy, k, g);
          fn(w + t * p.co + k, g);
        });
  }
}

// v[16][rows][ci] = B^T d B for the input tiles d of tiles [t0, t0 + nt) (zero outside the input), where
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
template <typename V>
void TransformInput(StrideOne, const Pass& p, const float* in, int64_t t0, int64_t nt, int64_t rows, float* v) {
  const int64_t position_stride = Stride(rows, p.ci);
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const Window<4> window(p, in, at.image, at.y - p.pt, at.x - p.pl);
    ForEachVector<V>(
        p.ci, [&](int64_t c, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          W d[4][4];
          window.Load(c, d);
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

// out = A^T m A (+ bias) for the tiles [t0, t0 + nt) of m[16][rows][co], the outputs inside `out` only, where
//   A^T = [1 1 1 0; 0 1 -1 -1].
template <typename V>
void TransformOutput(StrideOne, const Pass& p, const float* m, int64_t t0, int64_t nt, int64_t rows, const float* bias,
                     float* out) {
  const int64_t position_stride = Stride(rows, p.co);
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const OutputTile tile(p, at);
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
          for (int i = 0; i < tile.rows; ++i) {  // (A^T m) A
            Store(out + tile.At(i, 0) + k, s[i][0] + s[i][1] + s[i][2] + b);
            if (tile.cols == 2) Store(out + tile.At(i, 1) + k, s[i][1] - s[i][2] - s[i][3] + b);
          }
        });
  }
}

// w[16][rows][co] = A g A^T for the output-gradient tiles g of tiles [t0, t0 + nt) (zero outside the
// output): the gradient of the output transform.
template <typename V>
void TransformOutputGrad(StrideOne, const Pass& p, const float* dy, int64_t t0, int64_t nt, int64_t rows, float* w) {
  const int64_t position_stride = Stride(rows, p.co);
  ForEachOutputGradTile<V>(
      p, dy, t0, nt, w, [&](float* out, const auto& g) __attribute__((always_inline)) {
        using W = std::remove_cvref_t<decltype(g[0][0])>;
        W e[4][2];  // A g, A = [1 0; 1 1; 1 -1; 0 -1]
        for (int j = 0; j < 2; ++j) {
          e[0][j] = g[0][j];
          e[1][j] = g[0][j] + g[1][j];
          e[2][j] = g[0][j] - g[1][j];
          e[3][j] = -g[1][j];
        }
        for (int i = 0; i < 4; ++i) {  // (A g) A^T
          Store(out + (4 * i + 0) * position_stride, e[i][0]);
          Store(out + (4 * i + 1) * position_stride, e[i][0] + e[i][1]);
          Store(out + (4 * i + 2) * position_stride, e[i][0] - e[i][1]);
          Store(out + (4 * i + 3) * position_stride, -e[i][1]);
        }
      });
}

// ---- transforms of stride 2 (Note [Winograd convolutions of stride 2]) -------------------------------

// F(2, 2) along one axis: In3 maps 3 inputs to 3 positions (B^T = [1 -1 0; 0 1 0; 0 -1 1]), Out3 3 positions
// to 2 outputs (A^T = [1 1 0; 0 1 1]; also G^T, the weight gradient's), Spread3 2 values to 3 (A = G =
// [1 0; 1 1; 0 1]: a kernel's 2 taps, or 2 output gradients).
template <typename T>
[[gnu::always_inline]] inline void In3(const T (&d)[3], T (&v)[3]) {
  v[0] = d[0] - d[1];
  v[1] = d[1];
  v[2] = d[2] - d[1];
}
template <typename T>
[[gnu::always_inline]] inline void Out3(const T (&m)[3], T (&y)[2]) {
  y[0] = m[0] + m[1];
  y[1] = m[1] + m[2];
}
template <typename T>
[[gnu::always_inline]] inline void Spread3(const T (&g)[2], T (&w)[3]) {
  w[0] = g[0];
  w[1] = g[0] + g[1];
  w[2] = g[1];
}
// u[3 i + c] = A g A^T (Spread3 along both axes) of the 2 x 2 values g, and e = A g on the way: F(2x2,
// 2x2)'s kernel positions from its taps, and its output gradients' positions.
template <typename T>
[[gnu::always_inline]] inline void Spread2x2(const T (&g)[2][2], T (&e)[3][2], T* u) {
  for (int j = 0; j < 2; ++j) {  // A g, column by column
    const T column[2] = {g[0][j], g[1][j]};
    T r[3];
    Spread3(column, r);
    for (int i = 0; i < 3; ++i) e[i][j] = r[i];
  }
  for (int i = 0; i < 3; ++i) {  // (A g) A^T, row by row
    T r[3];
    Spread3(e[i], r);
    for (int c = 0; c < 3; ++c) u[3 * i + c] = r[c];
  }
}
// y = A^T m A (Out3 along both axes) of the 3 x 3 values m[3 r + c]: F(2x2, 2x2)'s outputs from its
// positions, and its kernel's 2 x 2 taps from the weight gradient's sums.
template <typename T>
[[gnu::always_inline]] inline void Out3x3(const T* m, T (&y)[2][2]) {
  T s[2][3];  // A^T m, column by column
  for (int c = 0; c < 3; ++c) {
    const T column[3] = {m[c], m[3 + c], m[6 + c]};
    T r[2];
    Out3(column, r);
    s[0][c] = r[0];
    s[1][c] = r[1];
  }
  for (int i = 0; i < 2; ++i) Out3(s[i], y[i]);
}

// Stores the 25 positions of one tile, position i at out + PhaseOffset(i, plane), from its four phases'
// inputs: ee (3 x 3, even rows and columns), eo (3 x 2), oe (2 x 3) and oo (2 x 2).
template <typename W>
[[gnu::always_inline]] inline void StorePhaseInputs(const W (&ee)[3][3], const W (&eo)[3][2], const W (&oe)[2][3],
                                                    const W (&oo)[2][2], float* out, int64_t plane) {
  W t[3][3];  // B^T ee, column by column
  for (int c = 0; c < 3; ++c) {
    const W d[3] = {ee[0][c], ee[1][c], ee[2][c]};
    W v[3];
    In3(d, v);
    for (int r = 0; r < 3; ++r) t[r][c] = v[r];
  }
  for (int r = 0; r < 3; ++r) {  // (B^T ee) B, row by row
    W v[3];
    In3(t[r], v);
    for (int c = 0; c < 3; ++c) Store(out + PhaseOffset(3 * r + c, plane), v[c]);
  }
  for (int j = 0; j < 2; ++j) {
    const W d[3] = {eo[0][j], eo[1][j], eo[2][j]};
    W v[3];
    In3(d, v);
    for (int r = 0; r < 3; ++r) Store(out + PhaseOffset(9 + 2 * r + j, plane), v[r]);
  }
  for (int i = 0; i < 2; ++i) {
    W v[3];
    In3(oe[i], v);
    for (int c = 0; c < 3; ++c) Store(out + PhaseOffset(15 + 2 * c + i, plane), v[c]);
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) Store(out + PhaseOffset(21 + 2 * i + j, plane), oo[i][j]);
  }
}

// y[phase][i][j]: the 2 x 2 results of each phase (ee, eo, oe, oo) from one tile's 25 positions (position i
// at in + PhaseOffset(i, plane)).
template <typename W>
[[gnu::always_inline]] inline void LoadPhaseOutputs(const float* in, int64_t plane, W (&y)[4][2][2]) {
  W m[kPhasePositions];
  for (int i = 0; i < kPhasePositions; ++i) Load(m[i], in + PhaseOffset(i, plane));
  Out3x3(m, y[0]);
  for (int j = 0; j < 2; ++j) {
    const W column[3] = {m[9 + j], m[11 + j], m[13 + j]};
    W r[2];
    Out3(column, r);
    y[1][0][j] = r[0];
    y[1][1][j] = r[1];
  }
  for (int i = 0; i < 2; ++i) {
    const W row[3] = {m[15 + i], m[17 + i], m[19 + i]};
    Out3(row, y[2][i]);
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) y[3][i][j] = m[21 + 2 * i + j];
  }
}

// v[25][rows][ci]: the positions of the stride-2 tiles [t0, t0 + nt) from their 5 x 5 input windows (zero
// outside the input): the phase (a, b) takes the window's rows a, a + 2, ... and columns b, b + 2, ...
template <typename V>
void TransformInput(StrideTwo, const Pass& p, const float* in, int64_t t0, int64_t nt, int64_t rows, float* v) {
  const int64_t plane = rows * p.ci;
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const Window<5> window(p, in, at.image, 2 * at.y - p.pt, 2 * at.x - p.pl);
    ForEachVector<V>(
        p.ci, [&](int64_t c, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          W d[5][5];
          window.Load(c, d);
          W ee[3][3], eo[3][2], oe[2][3], oo[2][2];
          for (int r = 0; r < 3; ++r) {
            for (int k = 0; k < 3; ++k) ee[r][k] = d[2 * r][2 * k];
            for (int k = 0; k < 2; ++k) eo[r][k] = d[2 * r][2 * k + 1];
          }
          for (int r = 0; r < 2; ++r) {
            for (int k = 0; k < 3; ++k) oe[r][k] = d[2 * r + 1][2 * k];
            for (int k = 0; k < 2; ++k) oo[r][k] = d[2 * r + 1][2 * k + 1];
          }
          StorePhaseInputs(ee, eo, oe, oo, v + t * p.ci + c, plane);
        });
  }
}

// out = the sum of the four phases' results (+ bias) for the stride-2 tiles [t0, t0 + nt) of m[25][rows][co],
// the outputs inside `out` only.
template <typename V>
void TransformOutput(StrideTwo, const Pass& p, const float* m, int64_t t0, int64_t nt, int64_t rows, const float* bias,
                     float* out) {
  const int64_t plane = rows * p.co;
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const OutputTile tile(p, at);
    ForEachVector<V>(
        p.co, [&](int64_t k, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          W y[4][2][2];
          LoadPhaseOutputs(m + t * p.co + k, plane, y);
          W b{};
          if (bias) Load(b, bias + k);
          for (int i = 0; i < tile.rows; ++i) {
            for (int j = 0; j < tile.cols; ++j) {
              Store(out + tile.At(i, j) + k, y[0][i][j] + y[1][i][j] + y[2][i][j] + y[3][i][j] + b);
            }
          }
        });
  }
}

// w[25][rows][co]: the gradients of the phases' results for the output-gradient tiles g (2 x 2) of the
// stride-2 tiles [t0, t0 + nt) (zero outside the output), the transpose of their TransformOutput.
template <typename V>
void TransformOutputGrad(StrideTwo, const Pass& p, const float* dy, int64_t t0, int64_t nt, int64_t rows, float* w) {
  const int64_t plane = rows * p.co;
  ForEachOutputGradTile<V>(
      p, dy, t0, nt, w, [&](float* out, const auto& g) __attribute__((always_inline)) {
        using W = std::remove_cvref_t<decltype(g[0][0])>;
        W e[3][2], ee[9];  // A g: (even, odd)'s positions; A g A^T: (even, even)'s
        Spread2x2(g, e, ee);
        for (int i = 0; i < 3; ++i) {
          for (int c = 0; c < 3; ++c) Store(out + PhaseOffset(3 * i + c, plane), ee[3 * i + c]);
          for (int j = 0; j < 2; ++j) Store(out + PhaseOffset(9 + 2 * i + j, plane), e[i][j]);
        }
        for (int i = 0; i < 2; ++i) {
          W r[3];
          Spread3(g[i], r);
          for (int c = 0; c < 3; ++c) Store(out + PhaseOffset(15 + 2 * c + i, plane), r[c]);
          for (int j = 0; j < 2; ++j) Store(out + PhaseOffset(21 + 2 * i + j, plane), g[i][j]);
        }
      });
}

// The backward data of a stride-2 convolution (p.phases: `in` = dy, `out` = dx). Along each axis, dx's row
// r is row r + pt of x padded, which sums dy(u - i) w(2i + a) over the taps 2i + a = r + pt - 2u: the phase
// a = (r + pt) % 2 of the padded rows is a correlation of dy with the taps of that parity, rotated (two
// taps for a = 0, one for a = 1). A tile of 4 rows of dx (2 on the grid) from y = 2 * at.y takes 2 rows of
// each phase, which read dy's rows from u0 - 1 + s to u0 + 1 + s (u0 = pt / 2 + at.y, s = pt % 2): the even
// phase all 3, the odd one rows 1 - s and 2 - s of them. v[25][rows][ci] from those 3 x 3 windows, in the
// positions' layout of StrideTwo's TransformInput (the weights rotated by TransformWeights).
template <typename V>
void TransformInput(StrideTwoTransposed, const Pass& p, const float* in, int64_t t0, int64_t nt, int64_t rows,
                    float* v) {
  const int64_t plane = rows * p.ci, sy = p.pt % 2, sx = p.pl % 2;
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    const Window<3> window(p, in, at.image, p.pt / 2 + at.y - 1 + sy, p.pl / 2 + at.x - 1 + sx);
    ForEachVector<V>(
        p.ci, [&](int64_t c, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          W d[3][3];
          window.Load(c, d);
          W eo[3][2], oe[2][3], oo[2][2];
          for (int r = 0; r < 3; ++r) {
            for (int k = 0; k < 2; ++k) eo[r][k] = d[r][k + 1 - sx];
          }
          for (int r = 0; r < 2; ++r) {
            for (int k = 0; k < 3; ++k) oe[r][k] = d[r + 1 - sy][k];
            for (int k = 0; k < 2; ++k) oo[r][k] = d[r + 1 - sy][k + 1 - sx];
          }
          StorePhaseInputs(d, eo, oe, oo, v + t * p.ci + c, plane);
        });
  }
}

// dx from m[25][rows][co] of the tiles [t0, t0 + nt) of dx's grid (p.phases): phase (a, b)'s result (i, j)
// of the tile at (y, x) is dx(2 (y + i) + (a xor pt % 2), 2 (x + j) + (b xor pl % 2)), where inside dx
// (the input's transform). Every element of dx is one tile's. (No bias: the signature is
// TransformOutput's.)
template <typename V>
void TransformOutput(StrideTwoTransposed, const Pass& p, const float* m, int64_t t0, int64_t nt, int64_t rows,
                     const float*, float* out) {
  const int64_t plane = rows * p.co, sy = p.pt % 2, sx = p.pl % 2;
  TileAt at = Locate(p, t0);
  for (int64_t t = 0; t < nt; ++t, Next(p, at)) {
    float* image = out + at.image * p.oh * p.ow * p.co;
    ForEachVector<V>(
        p.co, [&](int64_t k, auto lanes) __attribute__((always_inline)) {
          using W = typename decltype(lanes)::type;
          W y[4][2][2];
          LoadPhaseOutputs(m + t * p.co + k, plane, y);
          for (int phase = 0; phase < 4; ++phase) {
            for (int i = 0; i < 2; ++i) {
              const int64_t row = 2 * (at.y + i) + (phase / 2 ^ sy);
              if (row >= p.oh) continue;
              for (int j = 0; j < 2; ++j) {
                const int64_t col = 2 * (at.x + j) + (phase % 2 ^ sx);
                if (col < p.ow) Store(image + (row * p.ow + col) * p.co + k, y[phase][i][j]);
              }
            }
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

// The 16 matrices' values for one kernel k (taps k[i][j]): G k G^T for stride 1, where G = [1 0 0; .5 .5
// .5; .5 -.5 .5; 0 0 1]; for stride 2 the phases' (kPhaseWeight): F(2x2, 2x2)'s G g G^T of the taps (2i,
// 2j), F(2, 2)'s G g of (2i, 1) and of (1, 2j), and the tap (1, 1), where G = [1 0; 1 1; 0 1].
template <int kStride>
OF_AVX2 inline void KernelPositions(const __m256 (&k)[3][3], __m256 (&u)[16]) {
  if constexpr (kStride == 1) {
    const __m256 half = _mm256_set1_ps(0.5f);
    __m256 gk[4][3];  // G k
    for (int j = 0; j < 3; ++j) {
      gk[0][j] = k[0][j];
      gk[1][j] = half * (k[0][j] + k[1][j] + k[2][j]);
      gk[2][j] = half * (k[0][j] - k[1][j] + k[2][j]);
      gk[3][j] = k[2][j];
    }
    for (int i = 0; i < 4; ++i) {  // (G k) G^T
      u[4 * i + 0] = gk[i][0];
      u[4 * i + 1] = half * (gk[i][0] + gk[i][1] + gk[i][2]);
      u[4 * i + 2] = half * (gk[i][0] - gk[i][1] + gk[i][2]);
      u[4 * i + 3] = gk[i][2];
    }
  } else {
    const __m256 even[2][2] = {{k[0][0], k[0][2]}, {k[2][0], k[2][2]}};  // the taps (2i, 2j)
    __m256 gk[3][2];
    Spread2x2(even, gk, u);  // G g G^T into u[0..8]
    const __m256 rows[2] = {k[0][1], k[2][1]}, cols[2] = {k[1][0], k[1][2]};
    __m256 r[3], c[3];
    Spread3(rows, r);
    Spread3(cols, c);
    for (int i = 0; i < 3; ++i) {
      u[9 + i] = r[i];
      u[12 + i] = c[i];
    }
    u[15] = k[1][1];
  }
}

// The inverse of KernelPositions' map for the weight gradient: taps[3 i + j] from the 16 matrices' values z:
// G^T z G for stride 1 (G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1]); for stride 2 each phase's G^T (= [1 1
// 0; 0 1 1]) of its positions' sums.
template <int kStride>
OF_AVX2 inline void KernelTaps(const __m256 (&z)[16], __m256 (&taps)[9]) {
  if constexpr (kStride == 1) {
    const __m256 half = _mm256_set1_ps(0.5f);
    __m256 r[3][4];  // G^T z
    for (int j = 0; j < 4; ++j) {
      const __m256 mid = half * (z[4 + j] + z[8 + j]);
      r[0][j] = z[j] + mid;
      r[1][j] = half * (z[4 + j] - z[8 + j]);
      r[2][j] = mid + z[12 + j];
    }
    for (int i = 0; i < 3; ++i) {  // (G^T z) G
      const __m256 mid = half * (r[i][1] + r[i][2]);
      taps[i * 3 + 0] = r[i][0] + mid;
      taps[i * 3 + 1] = half * (r[i][1] - r[i][2]);
      taps[i * 3 + 2] = mid + r[i][3];
    }
  } else {
    __m256 even[2][2];  // G^T z G of (even, even): the taps (2i, 2j)
    Out3x3(z, even);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) taps[6 * i + 2 * j] = even[i][j];
    }
    const __m256 rows[3] = {z[9], z[10], z[11]}, cols[3] = {z[12], z[13], z[14]};
    __m256 r[2], c[2];
    Out3(rows, r);
    Out3(cols, c);
    taps[1] = r[0];
    taps[7] = r[1];
    taps[3] = c[0];
    taps[5] = c[1];
    taps[4] = z[15];
  }
}

// Note [Transformed weights in panels]
// The forward's (and backward data's) products multiply a block's tiles by each transformed weight matrix
// (a x b), their kernels reading two vectors of columns of every row in turn (32 floats with AVX-512, 16
// with AVX2). Row-major, those rows lie b floats apart, and at 256 channels a panel of 32 columns is 256
// lines 1 KiB apart, more than the L1 cache keeps. So TransformWeights stores each matrix in panels of
// the kernels' columns (the last columns in a panel of half as many, then of 8, as MultiplyPanels takes
// them), each panel's rows back to back: the kernels read it as one stream. ResNet-50's lazy step (2
// threads of an AVX-512 Xeon, alternated with the row-major matrices, per step): at batch 16 its
// 256-channel 3x3 forwards 56.2 -> 52.0 ms, backward data 53.7 -> 50.5 (64 and 128 channels the same); at
// batch 4 16.9 -> 15.7 and 16.7 -> 15.0, at 128 channels 9.1 -> 8.7 and 8.8 -> 8.5. The weight gradient's
// products read the block's transformed output gradients in that place; stored in panels by their
// transform, they were slower (batch 4: 19.7 -> 20.8 ms at 256 channels, 12.7 -> 14.0 at 128), and keep
// their rows.

// The panel of column b (a multiple of 8) of a matrix of `cols` columns, in panels of `columns` (the last
// columns in one of columns / 2, then in ones of 8): its first column and width, the columns that
// MultiplyPanels' kernels take at once. In panels, element (a, b) of an (rows x cols) matrix is at start *
// rows + a * width + b - start.
struct Panel {
  int64_t start, width;
};
inline Panel PanelOf(int64_t b, int64_t cols, int64_t columns) {
  const int64_t whole = cols / columns * columns, half = columns / 2;
  if (b < whole) return {b / columns * columns, columns};
  if (cols - whole >= half && b < whole + half) return {whole, half};
  return {b / 8 * 8, 8};
}

// u[16][a][b] (positions Stride(a, b) apart, each in panels of `columns`: Note [Transformed weights in
// panels]) = KernelPositions<kStride> of the kernels of weight (o, c, 3, 3). Forward: (a, b) = (c, o) and
// the weight's kernel; backward data: (a, b) = (o, c) and the kernel rotated by 180 degrees. Rows a in
// [begin, end), eight kernels at once, consecutive in b (a multiple of 8).
//
// The eight kernels of a step lie lane_stride floats apart: the backward data's back to back, so the
// steps go along b; the forward's 9c floats apart (one input channel's kernels of eight output channels),
// so the steps go down the rows a, where each of the eight kernels' next one follows it in memory. Along
// b, a row's o kernels lie 9c floats apart, in a few of L1's sets (2 of 64 at 512 channels), and were
// read from L2 again for every row: the forward's transform of a 512 x 512 x 3 x 3 weight took 2.5
// against 1.2 ms, of a 256 x 256 one 0.47 against 0.36 (2 threads, AVX-512 Xeon).
template <int kStride>
OF_AVX2 void TransformWeights(const float* weight, int64_t o, int64_t c, bool backward_data, int64_t begin, int64_t end,
                              int64_t columns, float* u) {
  const int64_t cols = backward_data ? c : o, rows = backward_data ? o : c, position_stride = Stride(o, c);
  // Kernel (a, b) starts at weight + 9 * (a * c + b) (backward data) or 9 * (b * c + a) (forward).
  const int64_t lane_stride = backward_data ? 9 : 9 * c, row_stride = backward_data ? 9 * c : 9;
  const int64_t outer = backward_data ? end - begin : cols / 8, inner = backward_data ? cols / 8 : end - begin;
  for (int64_t i = 0; i < outer; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t a = begin + (backward_data ? i : j), b = 8 * (backward_data ? j : i);
      __m256 taps[9];
      LoadKernels(weight + a * row_stride + b * lane_stride, lane_stride, taps);
      __m256 k[3][3];
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) k[i][j] = taps[backward_data ? (2 - i) * 3 + 2 - j : i * 3 + j];
      }
      __m256 positions[kPositions];
      KernelPositions<kStride>(k, positions);
      const Panel panel = PanelOf(b, cols, columns);
      float* out = u + panel.start * rows + a * panel.width + b - panel.start;
      for (int i = 0; i < kPositions; ++i) _mm256_storeu_ps(out + i * position_stride, positions[i]);
    }
  }
}

// weight (o, c, 3, 3) = KernelTaps<kStride> of z, the sum of `parts` arrays z_p[16][c][o] (`part_stride`
// apart, their positions Stride(c, o) apart): the weight gradient's inverse transform. Eight kernels at
// once, consecutive in o (a multiple of 8), for the input channels ci in [begin, end).
template <int kStride>
OF_AVX2 void InverseTransformWeights(const float* z, int64_t parts, int64_t part_stride, int64_t o, int64_t c,
                                     int64_t begin, int64_t end, float* weight) {
  for (int64_t ci = begin; ci < end; ++ci) {
    for (int64_t oi = 0; oi < o; oi += 8) {
      __m256 sums[kPositions];
      for (int i = 0; i < kPositions; ++i) {
        const float* at = z + i * Stride(c, o) + ci * o + oi;
        sums[i] = _mm256_loadu_ps(at);
        for (int64_t part = 1; part < parts; ++part) sums[i] += _mm256_loadu_ps(at + part * part_stride);
      }
      __m256 taps[9];
      KernelTaps<kStride>(sums, taps);
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

// The columns that the products' kernels of vectors V take at a time: two vectors.
template <typename V>
constexpr int64_t KernelColumns() {
  return 2 * static_cast<int64_t>(sizeof(V) / sizeof(float));
}

// c (m x n, rows n apart) (= or +=) a * b for a(r, d) = a[r * a_row + d * a_depth] (m x depth) and b
// (depth x n: rows n apart, or in PanelOf's panels of 2 V's columns where b_in_panels, Note [Transformed
// weights in panels]); n a multiple of 8. Blocks of R rows and one panel of columns: two vectors V, the
// last columns one V, then one Vec8.
template <typename V, int R, bool Accumulate>
void MultiplyPanels(int64_t m, int64_t n, int64_t depth, const float* a, int64_t a_row, int64_t a_depth, const float* b,
                    bool b_in_panels, float* c) {
  constexpr int64_t L = sizeof(V) / sizeof(float), kColumns = KernelColumns<V>();
  // Columns in panels of b of at most 128 KiB, which stay in the L2 cache while every row passes.
  const int64_t panel = std::max<int64_t>(kColumns, 32 * 1024 / depth / kColumns * kColumns);
  for (int64_t k0 = 0; k0 < n; k0 += panel) {
    for (int64_t r = 0; r < m; r += R) {
      const int rows = static_cast<int>(std::min<int64_t>(R, m - r));
      const float* ar = a + r * a_row;
      for (int64_t k = k0; k < std::min(n, k0 + panel);) {
        const Panel columns = PanelOf(k, n, kColumns);  // k is its start
        float* ck = c + r * n + k;
        const float* bk = b_in_panels ? b + k * depth : b + k;
        const int64_t ldb = b_in_panels ? columns.width : n;
        if (columns.width == kColumns) {
          MultiplyRows<V, R, 2, Accumulate>(rows, ar, a_row, a_depth, bk, ldb, ck, n, depth);
        } else if (columns.width == L) {
          MultiplyRows<V, R, 1, Accumulate>(rows, ar, a_row, a_depth, bk, ldb, ck, n, depth);
        } else {
          MultiplyRows<Vec8, R, 1, Accumulate>(rows, ar, a_row, a_depth, bk, ldb, ck, n, depth);
        }
        k += columns.width;
      }
    }
  }
}

// The first of the positions of S that multiply weight matrix w, and how many do (consecutive ones).
template <typename S>
constexpr int FirstPosition(int w) {
  int i = 0;
  while (S::Weight(i) != w) ++i;
  return i;
}
template <typename S>
constexpr int PositionsOf(int w) {
  int count = 0;
  for (int i = 0; i < S::kTilePositions; ++i) count += S::Weight(i) == w;
  return count;
}

// The kernels of one vector width, each a copy for its instruction set (Note [One kernel for two vector
// widths]), of the transforms of S. Products: 6 x 16 results in 12 of AVX2's 16 registers; 12 x 32 in 24 of
// AVX-512's 32.
#define OF_WINOGRAD_KERNELS(Name, Target, V, R)                                                                    \
  struct Name {                                                                                                    \
    static constexpr int64_t kColumns = KernelColumns<V>();                                                        \
    template <typename S>                                                                                          \
    static Target __attribute__((flatten)) void Input(const Pass& p, const float* in, int64_t t0, int64_t nt,      \
                                                      int64_t rows, float* v) {                                    \
      TransformInput<V>(S{}, p, in, t0, nt, rows, v);                                                              \
    }                                                                                                              \
    template <typename S>                                                                                          \
    static Target __attribute__((flatten)) void Output(const Pass& p, const float* m, int64_t t0, int64_t nt,      \
                                                       int64_t rows, const float* bias, float* out) {              \
      TransformOutput<V>(S{}, p, m, t0, nt, rows, bias, out);                                                      \
    }                                                                                                              \
    template <typename S>                                                                                          \
    static Target __attribute__((flatten)) void OutputGrad(const Pass& p, const float* dy, int64_t t0, int64_t nt, \
                                                           int64_t rows, float* w) {                               \
      TransformOutputGrad<V>(S{}, p, dy, t0, nt, rows, w);                                                         \
    }                                                                                                              \
    template <bool Accumulate>                                                                                     \
    static Target __attribute__((flatten)) void Multiply(int64_t m, int64_t n, int64_t depth, const float* a,      \
                                                         int64_t a_row, int64_t a_depth, const float* b,           \
                                                         bool b_in_panels, float* c) {                             \
      MultiplyPanels<V, R, Accumulate>(m, n, depth, a, a_row, a_depth, b, b_in_panels, c);                         \
    }                                                                                                              \
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

// The columns of the transformed weights' panels: those of the products' kernels on this CPU.
int64_t PanelColumns() { return WideVectors() ? Avx512Kernels::kColumns : Avx2Kernels::kColumns; }

// ---- passes -----------------------------------------------------------------------------------------

// TransformWeights over all rows, on the pool: u[16][a][b] as TransformWeights describes, in panels for the
// CPU's kernels, or plain (rows of b) for the products by position (Note [Winograd passes by position]).
AlignedFloats TransformedWeights(const float* weight, int64_t o, int64_t c, bool backward_data, int stride,
                                 bool by_position, ThreadPool& pool) {
  AlignedFloats u = NewAlignedFloats(kPositions * Stride(o, c));
  const int64_t rows = backward_data ? o : c, columns = backward_data ? c : o;
  pool.ParallelFor(rows, WeightRowsPerChunk(columns), [&](int64_t begin, int64_t end) {
    (stride == 1 ? TransformWeights<1> : TransformWeights<2>)(weight, o, c, backward_data, begin, end,
                                                              by_position ? columns : PanelColumns(), u.get());
  });
  return u;
}

// out = the convolution of `in` with transformed weights u[16][ci][co] (+ bias), on kernels K with the
// transforms of S.
template <typename K, typename S>
void RunForward(const Pass& p, const float* in, const float* u, const float* bias, float* out, ThreadPool& pool) {
  constexpr int kTilePositions = S::kTilePositions;
  const int64_t tiles = p.tiles(), per_block = TilesPerBlock(p, kTilePositions, pool.num_threads()),
                blocks = (tiles + per_block - 1) / per_block;
  pool.ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    thread_local ScratchBuffer v_buffer, m_buffer;
    float* v = v_buffer.Get(kTilePositions * Stride(per_block, p.ci));
    float* m = m_buffer.Get(kTilePositions * Stride(per_block, p.co));
    for (int64_t block = begin; block < end; ++block) {
      const int64_t t0 = block * per_block, nt = std::min(per_block, tiles - t0);
      K::template Input<S>(p, in, t0, nt, nt, v);
      for (int w = 0; w < kPositions; ++w) {  // the rows of w's positions (one matrix) times w's matrix
        const int first = FirstPosition<S>(w);
        K::template Multiply<false>(PositionsOf<S>(w) * nt, p.co, p.ci, v + S::Offset(first, nt * p.ci), p.ci, 1,
                                    u + w * Stride(p.ci, p.co), /*b_in_panels=*/true, m + S::Offset(first, nt * p.co));
      }
      K::template Output<S>(p, m, t0, nt, nt, bias, out);
    }
  });
}

// dw = the weight gradient, on kernels K with the transforms of S.
template <typename K, typename S>
void RunBackwardWeight(const Winograd3x3& s, const float* x, const float* dy, float* dw, ThreadPool& pool) {
  constexpr int kTilePositions = S::kTilePositions;
  const Pass p = OutputPass(s);
  const int64_t tiles = p.tiles(), per_block = WeightGradientTilesPerBlock(p, kTilePositions, pool.num_threads()),
                blocks = (tiles + per_block - 1) / per_block;
  // Each part sums its share of the blocks into its own z[16][c][o] (its first block overwrites it); the
  // inverse transform adds the parts in order.
  const int64_t parts = std::min<int64_t>(pool.num_threads(), blocks), z_size = kPositions * Stride(s.c, s.o);
  const AlignedFloats z = NewAlignedFloats(parts * z_size);
  pool.ParallelFor(parts, 1, [&](int64_t begin, int64_t end) {
    thread_local ScratchBuffer v_buffer, g_buffer;
    float* v = v_buffer.Get(kTilePositions * Stride(per_block, p.ci));
    float* g = g_buffer.Get(kTilePositions * Stride(per_block, p.co));
    for (int64_t part = begin; part < end; ++part) {
      float* zp = z.get() + part * z_size;
      const int64_t first = blocks * part / parts;
      for (int64_t block = first; block < blocks * (part + 1) / parts; ++block) {
        const int64_t t0 = block * per_block, nt = std::min(per_block, tiles - t0);
        K::template Input<S>(p, x, t0, nt, nt, v);
        K::template OutputGrad<S>(p, dy, t0, nt, nt, g);
        for (int w = 0; w < kPositions; ++w) {  // z[w] (c x o) (+)= v[w's]^T (c x rows) g[w's] (rows x o)
          const int first_position = FirstPosition<S>(w);
          const auto multiply = block == first ? K::template Multiply<false> : K::template Multiply<true>;
          multiply(p.ci, p.co, PositionsOf<S>(w) * nt, v + S::Offset(first_position, nt * p.ci), 1, p.ci,
                   g + S::Offset(first_position, nt * p.co), /*b_in_panels=*/false, zp + w * Stride(p.ci, p.co));
        }
      }
    }
  });
  pool.ParallelFor(s.c, WeightRowsPerChunk(s.o), [&](int64_t begin, int64_t end) {
    (s.stride == 1 ? InverseTransformWeights<1> : InverseTransformWeights<2>)(z.get(), parts, z_size, s.o, s.c, begin,
                                                                              end, dw);
  });
}

// Note [Winograd passes by position]
// The passes above work on blocks of tiles, one thread's each, that stay in the L2 cache from the
// transforms to the products; each block reads all 16 transformed weight matrices (the forward and backward
// data), or adds into 16 * ci * co sums of the thread's own, loaded and stored again for every block (the
// weight gradient, whose parts are added up at the end). From 4 MiB of them (kByPosition: 256 channels in
// and out; 16 MiB at 512) that traffic dominates. There the threads transform spans of tiles together,
// into matrices they share (at most kSpanBytes of them, in the calling thread's buffers), and then split
// the 16 products by weight matrix: each matrix is one thread's, multiplied over the whole span in one
// product, and the weight gradient's sums are loaded again only for the next span; the forward's outputs
// are transformed back after. The products are oneDNN's sgemm, which packs its operands (MultiplyPanels
// read the weight gradient's transposed input with rows ci floats apart and reached about half of the FMA
// peak there). In ResNet-50's lazy training step (2 threads of an AVX-512 Xeon, alternated builds, per
// call, forward / backward data / weight gradient), at 256 channels (14x14): batch 16 6.7 / 6.8 / 8.3 ->
// 6.1 / 6.3 / 7.1 ms, batch 4 2.1 / 2.1 / 2.4 -> 1.8 / 1.7 / 1.9, batch 1 0.85 / 0.85 / 0.92 -> 0.69 / 0.61
// / 0.57. At 512 (7x7), which oneDNN's direct kernels and products over patches ran before
// (WinogradRuns), batch 16 11.1 / 10.9 / 12.1 -> 9.8 / 8.9 / 9.8. At 128 channels (1 MiB) the blocks stay
// faster: the forward 4.8-5.1 against 5.2-5.6 ms at batch 16 (warm, alone), the weight gradient 9.0
// against 9.3 in the step.
constexpr int64_t kByPosition = int64_t{4} << 20;
constexpr int64_t kSpanBytes = int64_t{16} << 20;

bool ByPosition(const Winograd3x3& s) { return kPositions * s.c * s.o * int64_t{sizeof(float)} >= kByPosition; }

// Tiles per span of the passes by position, for tiles of `positions` positions: their transformed
// matrices (positions * tiles * (ci + co) floats) in at most kSpanBytes, split evenly.
int64_t TilesPerSpan(const Pass& p, int64_t positions) {
  const int64_t most = std::max<int64_t>(kRows, kSpanBytes / int64_t{sizeof(float)} / (positions * (p.ci + p.co)));
  const int64_t spans = (p.tiles() + most - 1) / most;
  return (p.tiles() + spans - 1) / spans;
}

// The calling thread's buffer `which` (0 or 1) of at least `floats` floats, for the passes by position:
// shared by all of them (at most kSpanBytes together, kept for the next call), filled and read by the
// pool's threads during a call.
float* SpanBuffer(int which, int64_t floats) {
  thread_local ScratchBuffer buffers[2];
  return buffers[which].Get(floats);
}

// Calls fn(w, first, count) for the weight matrices w of S whose positions (count of them from `first`)
// have their middle in share `part` of `parts` equal shares of S's positions: the products by position
// split between the pool's threads.
template <typename S, typename Fn>
void ForEachWeightOfPart(int64_t part, int64_t parts, Fn&& fn) {
  for (int w = 0, before = 0; w < kPositions; before += PositionsOf<S>(w), ++w) {
    if ((2 * before + PositionsOf<S>(w)) * parts / (2 * S::kTilePositions) == part) {
      fn(w, FirstPosition<S>(w), PositionsOf<S>(w));
    }
  }
}

// out = the convolution of `in` with transformed weights u[16][ci][co] (plain) (+ bias), by position (Note
// [Winograd passes by position]), with the transforms of kernels K and S.
template <typename K, typename S>
void RunForwardByPosition(const Pass& p, const float* in, const float* u, const float* bias, float* out,
                          ThreadPool& pool) {
  constexpr int kTilePositions = S::kTilePositions;
  const int64_t tiles = p.tiles(), threads = pool.num_threads(), per_span = TilesPerSpan(p, kTilePositions);
  float* v = SpanBuffer(0, kTilePositions * Stride(per_span, p.ci));
  float* m = SpanBuffer(1, kTilePositions * Stride(per_span, p.co));
  for (int64_t t0 = 0; t0 < tiles; t0 += per_span) {
    const int64_t nt = std::min(per_span, tiles - t0);
    pool.ParallelFor(nt, kRows, [&](int64_t begin, int64_t end) {
      K::template Input<S>(p, in, t0 + begin, end - begin, nt, v + begin * p.ci);
    });
    pool.ParallelFor(threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        ForEachWeightOfPart<S>(part, threads, [&](int w, int first, int count) {
          dnnl_util::SgemmAlone('N', 'N', count * nt, p.co, p.ci, 1.0f, v + S::Offset(first, nt * p.ci), p.ci,
                                u + w * Stride(p.ci, p.co), p.co, 0.0f, m + S::Offset(first, nt * p.co), p.co);
        });
      }
    });
    pool.ParallelFor(nt, kRows, [&](int64_t begin, int64_t end) {
      K::template Output<S>(p, m + begin * p.co, t0 + begin, end - begin, nt, bias, out);
    });
  }
}

// dw = the weight gradient, on kernels K with the transforms of S, by position (Note [Winograd passes by
// position]).
template <typename K, typename S>
void RunBackwardWeightByPosition(const Winograd3x3& s, const float* x, const float* dy, float* dw, ThreadPool& pool) {
  constexpr int kTilePositions = S::kTilePositions;
  const Pass p = OutputPass(s);
  const int64_t tiles = p.tiles(), threads = pool.num_threads(), per_span = TilesPerSpan(p, kTilePositions);
  float* v = SpanBuffer(0, kTilePositions * Stride(per_span, p.ci));
  float* g = SpanBuffer(1, kTilePositions * Stride(per_span, p.co));
  const int64_t z_size = kPositions * Stride(s.c, s.o);
  const AlignedFloats z = NewAlignedFloats(z_size);
  for (int64_t t0 = 0; t0 < tiles; t0 += per_span) {
    const int64_t nt = std::min(per_span, tiles - t0);
    pool.ParallelFor(nt, kRows, [&](int64_t begin, int64_t end) {
      K::template Input<S>(p, x, t0 + begin, end - begin, nt, v + begin * p.ci);
      K::template OutputGrad<S>(p, dy, t0 + begin, end - begin, nt, g + begin * p.co);
    });
    // z[w] (c x o) (+)= v[w's]^T (c x rows) g[w's] (rows x o)
    pool.ParallelFor(threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        ForEachWeightOfPart<S>(part, threads, [&](int w, int first, int count) {
          dnnl_util::SgemmAlone('T', 'N', p.ci, p.co, count * nt, 1.0f, v + S::Offset(first, nt * p.ci), p.ci,
                                g + S::Offset(first, nt * p.co), p.co, t0 == 0 ? 0.0f : 1.0f,
                                z.get() + w * Stride(p.ci, p.co), p.co);
        });
      }
    });
  }
  pool.ParallelFor(s.c, WeightRowsPerChunk(s.o), [&](int64_t begin, int64_t end) {
    (s.stride == 1 ? InverseTransformWeights<1> : InverseTransformWeights<2>)(z.get(), 1, z_size, s.o, s.c, begin, end,
                                                                              dw);
  });
}

// The passes on the kernels of the CPU's vector width (WideVectors).
template <typename S>
void Forward(const Pass& p, const float* in, const float* u, const float* bias, float* out, bool by_position,
             ThreadPool& pool) {
  if (by_position) {
    return (WideVectors() ? RunForwardByPosition<Avx512Kernels, S>
                          : RunForwardByPosition<Avx2Kernels, S>)(p, in, u, bias, out, pool);
  }
  (WideVectors() ? RunForward<Avx512Kernels, S> : RunForward<Avx2Kernels, S>)(p, in, u, bias, out, pool);
}
template <typename S>
void BackwardWeight(const Winograd3x3& s, const float* x, const float* dy, float* dw, ThreadPool& pool) {
  if (ByPosition(s)) {
    return (WideVectors() ? RunBackwardWeightByPosition<Avx512Kernels, S>
                          : RunBackwardWeightByPosition<Avx2Kernels, S>)(s, x, dy, dw, pool);
  }
  (WideVectors() ? RunBackwardWeight<Avx512Kernels, S> : RunBackwardWeight<Avx2Kernels, S>)(s, x, dy, dw, pool);
}

}  // namespace

bool WinogradRuns(const Winograd3x3& s) {
  const auto padding_ok = [](int64_t p) { return p >= 0 && p <= 2; };
  // Stride 1: the backward data pads by 2 - p at the end too.
  const bool end_padding_ok =
      s.stride == 2 || (padding_ok(s.oh + 2 - s.h - s.pad_top) && padding_ok(s.ow + 2 - s.w - s.pad_left));
  // Measured faster than oneDNN's direct kernels from 16 to 256 channels (bench/README.md), and by position
  // (Note [Winograd passes by position]) at 512 too over at least kWideTiles tiles. Below, the 16 MiB of
  // transformed weights or sums weigh more than the 1.7x fewer products gain (7x7 images fill 8x8 outputs'
  // worth of tiles): not measured below batch 4 of ResNet-50's last stage (64 tiles), where the three
  // passes took 3.4 / 2.8 / 3.0 ms per call against oneDNN's 3.6 / 3.3 and the product over patches' 3.0.
  constexpr int64_t kWideTiles = 64;
  const int64_t most = OutputPass(s).tiles() >= kWideTiles ? 512 : 256;
  const auto channels_ok = [most](int64_t c) { return c % 8 == 0 && c >= 16 && c <= most; };
  return HasAvx2Fma() && Setting() != "0" && (s.stride == 1 || s.stride == 2) && channels_ok(s.c) && channels_ok(s.o) &&
         padding_ok(s.pad_top) && padding_ok(s.pad_left) && end_padding_ok && s.n * s.oh * s.ow >= 64;
}

void WinogradForward(const Winograd3x3& s, const float* x, const float* w, const float* bias, float* y,
                     ThreadPool& pool) {
  const bool by_position = ByPosition(s);
  const AlignedFloats u = TransformedWeights(w, s.o, s.c, /*backward_data=*/false, s.stride, by_position, pool);
  const Pass p = OutputPass(s);
  (s.stride == 1 ? Forward<StrideOne> : Forward<StrideTwo>)(p, x, u.get(), bias, y, by_position, pool);
}

void WinogradBackwardData(const Winograd3x3& s, const float* dy, const float* w, float* dx, ThreadPool& pool) {
  const bool by_position = ByPosition(s);
  const AlignedFloats u = TransformedWeights(w, s.o, s.c, /*backward_data=*/true, s.stride, by_position, pool);
  if (s.stride == 2) {  // over dx's phases
    const Pass p{s.n, s.oh, s.ow, s.o, s.h, s.w, s.c, s.pad_top, s.pad_left, /*phases=*/true};
    return Forward<StrideTwoTransposed>(p, dy, u.get(), nullptr, dx, by_position, pool);
  }
  // dx[y] sums dy[y + pad_top - i] w[i]: a convolution of dy with the rotated kernel and padding 2 - pad.
  const Pass p{s.n, s.oh, s.ow, s.o, s.h, s.w, s.c, 2 - s.pad_top, 2 - s.pad_left};
  Forward<StrideOne>(p, dy, u.get(), nullptr, dx, by_position, pool);
}

void WinogradBackwardWeight(const Winograd3x3& s, const float* x, const float* dy, float* dw, ThreadPool& pool) {
  (s.stride == 1 ? BackwardWeight<StrideOne> : BackwardWeight<StrideTwo>)(s, x, dy, dw, pool);
}

#else  // no AVX2 kernels on other architectures

bool WinogradRuns(const Winograd3x3&) { return false; }
void WinogradForward(const Winograd3x3&, const float*, const float*, const float*, float*, ThreadPool&) {}
void WinogradBackwardData(const Winograd3x3&, const float*, const float*, float*, ThreadPool&) {}
void WinogradBackwardWeight(const Winograd3x3&, const float*, const float*, float*, ThreadPool&) {}

#endif

}  // namespace oneflow::cpu
