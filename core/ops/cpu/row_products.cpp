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

constexpr int kTileRows = 14;     // rows of c per tile: 14 x 2 vectors of sums in 28 of the 32 registers
constexpr int kTileColumns = 32;  // two vectors
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

// c[R][32] (= or +=) sum over r < rows of a[r * lda + i] b[r * ldb + j], i < R, j < 32; one line of the
// next block fetched per row.
template <int R>
OF_AVX512 void Tile(int64_t rows, const float* a, int64_t lda, const float* b, int64_t ldb, bool add, float* c,
                    int64_t ldc, NextBlock& next) {
  __m512 sums[R][2];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) sums[i][0] = sums[i][1] = _mm512_setzero_ps();
  NextBlock fetch = next;  // in registers, not stored back every row
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 b0 = _mm512_loadu_ps(b + r * ldb), b1 = _mm512_loadu_ps(b + r * ldb + 16);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 ai = _mm512_set1_ps(a[r * lda + i]);
      sums[i][0] = _mm512_fmadd_ps(ai, b0, sums[i][0]);
      sums[i][1] = _mm512_fmadd_ps(ai, b1, sums[i][1]);
    }
    fetch.Next();
  }
  next = fetch;
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float* ci = c + i * ldc;
    if (add) {
      sums[i][0] = _mm512_add_ps(sums[i][0], _mm512_loadu_ps(ci));
      sums[i][1] = _mm512_add_ps(sums[i][1], _mm512_loadu_ps(ci + 16));
    }
    _mm512_storeu_ps(ci, sums[i][0]);
    _mm512_storeu_ps(ci + 16, sums[i][1]);
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, bool, float*, int64_t, NextBlock&);

// Tile<R> at index R.
constexpr TileFn kTileOfRows[kTileRows + 1] = {nullptr,  Tile<1>,  Tile<2>,  Tile<3>,  Tile<4>,
                                               Tile<5>,  Tile<6>,  Tile<7>,  Tile<8>,  Tile<9>,
                                               Tile<10>, Tile<11>, Tile<12>, Tile<13>, Tile<14>};

}  // namespace

bool RowProductsRun(int64_t n) { return HasAvx512() && n % kTileColumns == 0; }

void SumRowProducts(int64_t rows, int64_t m, int64_t n, const float* a, int64_t lda, const float* b, int64_t ldb,
                    bool accumulate, float* c, int64_t ldc) {
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const int64_t count = std::min(kBlockRows, rows - r0), after = r0 + count;
    NextBlock next =
        after < rows ? NextBlock(a + after * lda, lda, m, b + after * ldb, ldb, n, std::min(kBlockRows, rows - after))
                     : NextBlock();
    const float *ab = a + r0 * lda, *bb = b + r0 * ldb;
    const bool add = accumulate || r0 > 0;
    for (int64_t i = 0; i < m; i += kTileRows) {
      const TileFn tile = kTileOfRows[std::min<int64_t>(kTileRows, m - i)];
      for (int64_t j = 0; j < n; j += kTileColumns)
        tile(count, ab + i, lda, bb + j, ldb, add, c + i * ldc + j, ldc, next);
    }
  }
}

#else

bool RowProductsRun(int64_t) { return false; }

void SumRowProducts(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, bool, float*, int64_t) {}

#endif

}  // namespace oneflow::cpu
