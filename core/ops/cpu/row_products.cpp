// Sums of outer products of matrix rows on AVX-512 (see row_products.h, Note [Weight gradients as sums of
// row products]).
#include "core/ops/cpu/row_products.h"

#include <algorithm>

#include "core/ops/cpu/x86_simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace oneflow::cpu {

#if defined(__x86_64__)
namespace {

// A tile of c summed in registers: kRows x 32 or kRows / 2 x 64 (RowTile), 28 of the 32 zmm registers.
constexpr int kTileRows = 14;
// Rows of a and b per block: a tile's lines of one block (128 x 2 of b, 128 x 1-2 of a) stay in L1
// while the tile's products pass over them (256 rows: 5-15% slower, 64: up to 20% slower).
constexpr int64_t kBlockRows = 128;

// The cache lines of the next block's rows of a and then of b, fetched one per Next().
class NextBlock {
 public:
  NextBlock() : parts_{}, rows_(0), part_(2) {}  // none: the last block
  NextBlock(const float* a, int64_t lda, int64_t m, const float* b, int64_t ldb, int64_t n, int64_t rows)
      : parts_{{reinterpret_cast<const char*>(a), lda * 4, (m * 4 + 63) / 64 + 1},
               {reinterpret_cast<const char*>(b), ldb * 4, (n * 4 + 63) / 64 + 1}},
        rows_(rows),
        part_(0) {}

  void Next() {
    if (part_ == 2) return;
    const Part& p = parts_[part_];
    _mm_prefetch(p.start + row_ * p.stride + line_ * 64, _MM_HINT_T0);
    if (++line_ < p.lines) return;
    line_ = 0;
    if (++row_ < rows_) return;
    row_ = 0;
    ++part_;
  }

 private:
  struct Part {
    const char* start;
    int64_t stride, lines;  // bytes between rows; lines per row (its bytes' lines, one more where unaligned)
  };
  Part parts_[2];
  int64_t rows_;
  int part_;  // 2: done
  int64_t row_ = 0, line_ = 0;
};

// c[R][16 V] (= or +=) sum over r < rows of a[r * lda + i] b[r * ldb + j], i < R, j < 16 V; one line of
// the next block fetched per row.
template <int R, int V>
OF_AVX512 void Tile(int64_t rows, const float* a, int64_t lda, const float* b, int64_t ldb, bool add, float* c,
                    int64_t ldc, NextBlock& next) {
  __m512 sums[R][V];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) sums[i][v] = _mm512_setzero_ps();
  }
  NextBlock fetch = next;  // in registers, not stored back every row
  for (int64_t r = 0; r < rows; ++r) {
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(b + r * ldb + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 ai = _mm512_set1_ps(a[r * lda + i]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) sums[i][v] = _mm512_fmadd_ps(ai, bv[v], sums[i][v]);
    }
    fetch.Next();
  }
  next = fetch;
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* cv = c + i * ldc + 16 * v;
      _mm512_storeu_ps(cv, add ? _mm512_add_ps(sums[i][v], _mm512_loadu_ps(cv)) : sums[i][v]);
    }
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, bool, float*, int64_t, NextBlock&);

// Tile<R, 2> (14 x 32 tiles) and Tile<R, 4> (7 x 64) at index R.
constexpr TileFn kNarrowTiles[kTileRows + 1] = {nullptr,     Tile<1, 2>,  Tile<2, 2>,  Tile<3, 2>,  Tile<4, 2>,
                                                Tile<5, 2>,  Tile<6, 2>,  Tile<7, 2>,  Tile<8, 2>,  Tile<9, 2>,
                                                Tile<10, 2>, Tile<11, 2>, Tile<12, 2>, Tile<13, 2>, Tile<14, 2>};
constexpr TileFn kWideTiles[kTileRows / 2 + 1] = {nullptr,    Tile<1, 4>, Tile<2, 4>, Tile<3, 4>,
                                                  Tile<4, 4>, Tile<5, 4>, Tile<6, 4>, Tile<7, 4>};

}  // namespace

bool RowProductsRun(int64_t n, RowTile tile) { return HasAvx512() && n % ColumnsOf(tile) == 0; }

void SumRowProducts(int64_t rows, int64_t m, int64_t n, const float* a, int64_t lda, const float* b, int64_t ldb,
                    bool accumulate, float* c, int64_t ldc, RowTile shape) {
  const bool wide = shape == RowTile::k7x64;
  const int64_t tile_rows = wide ? kTileRows / 2 : kTileRows, tile_columns = ColumnsOf(shape);
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0), after = r0 + count;
    NextBlock next =
        after < rows ? NextBlock(a + after * lda, lda, m, b + after * ldb, ldb, n, std::min(kBlockRows, rows - after))
                     : NextBlock();
    const float *ab = a + r0 * lda, *bb = b + r0 * ldb;
    const bool add = accumulate || r0 > 0;
    for (int64_t i = 0; i < m; i += tile_rows) {
      const int64_t tile_m = std::min(tile_rows, m - i);
      const TileFn tile = wide ? kWideTiles[tile_m] : kNarrowTiles[tile_m];
      for (int64_t j = 0; j < n; j += tile_columns)
        tile(count, ab + i, lda, bb + j, ldb, add, c + i * ldc + j, ldc, next);
    }
  }
}

#else

bool RowProductsRun(int64_t, RowTile) { return false; }

void SumRowProducts(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, bool, float*, int64_t,
                    RowTile) {}

#endif

}  // namespace oneflow::cpu
