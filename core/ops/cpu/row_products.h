// Sums of outer products of matrix rows, c = a^T b over many rows: a 1x1 convolution's weight gradient
// over its positions (dW = dY^T X, dY and X channels-last), on AVX-512 where the CPU has it.
//
// Note [Weight gradients as sums of row products]
// oneDNN's sgemm runs dW = dY^T X (o x c, a sum over P positions) by packing both operands, each of which
// it reads once and uses a few times only where o and c are small: ResNet-50's 1x1 weight gradients at
// 56x56 (64 x 64 to 128 x 256 weights) ran at 170-255 GFLOP/s in its training step at batch 16 on 2
// threads of an AVX-512 Xeon (its FMA peak: 435). SumRowProducts reads the rows where they are: blocks of
// kBlockRows positions, each a tile of 14 x 32 sums in 28 registers at a time (14 values of dY's row
// broadcast, two vectors of X's), and it fetches the next block's lines into L1 while the products of
// the current one run (without that the same loops ran at 150-190 GFLOP/s, memory latency bound).
// Measured stand-alone, 2 threads each summing half of the positions, cold caches, against the same
// shares on sgemm (AVX-512 Xeon): 256 x 64 over 50,176 positions 6.1 against 7.1 ms, 64 x 256 5.6
// against 6.8, 64 x 64 1.6 against 2.7, 128 x 256 11.2 against 13.3, 512 x 128 over 12,544 6.1 against
// 6.5; over 3136 positions 256 x 64 0.53 against 0.68 ms, 512 x 128 1.7 against 1.9. With larger
// weights (256 x 1024 and up) its sums of each block go to memory and back: slower than sgemm there.
// In ResNet-50's lazy training step (2 threads, alternated with sgemm's, profiled): at batch 16 the
// 56x56 stage's weight gradients 256 x 64 26.7 -> 23.8 ms per step (4 calls), 64 x 256 13.3 -> 11.7, 128
// x 256 13.0 -> 11.6, 64 x 64 2.3 -> 1.5; at batch 4 6.5 -> 5.7, 3.2 -> 2.8, 3.1 -> 2.8, 0.47 -> 0.39; at
// batch 1 1.55 -> 1.37 for the 256 x 64 ones, the others the same.
#pragma once

#include <cstdint>

namespace oneflow::cpu {

// The tile of c that a pass over a block of rows sums in 28 registers: 14 x 32 (14 values of a's row
// broadcast, two vectors of b's) or 7 x 64 (7 values, four vectors), which wastes less where a's rows
// are a few multiples of 7 (Note [Weight gradients over image channels] in core/ops/dnnl/conv.cpp).
enum class RowTile { k14x32, k7x64 };
constexpr int64_t ColumnsOf(RowTile tile) { return tile == RowTile::k7x64 ? 64 : 32; }

// Whether SumRowProducts runs here with `tile`: an x86-64 CPU with AVX-512F, and n a multiple of the
// tile's columns.
bool RowProductsRun(int64_t n, RowTile tile = RowTile::k14x32);

// c (m x n, rows ldc apart) = a^T b, plus c where `accumulate`: the sum over the rows r < rows of the
// outer product of a's row r (m floats, rows lda apart; they may overlap) with b's row r (n floats, ldb
// apart), on the calling thread. Only where RowProductsRun(n, tile). c must not overlap a or b;
// thread-safe (each call its own c).
void SumRowProducts(int64_t rows, int64_t m, int64_t n, const float* a, int64_t lda, const float* b, int64_t ldb,
                    bool accumulate, float* c, int64_t ldc, RowTile tile = RowTile::k14x32);

}  // namespace oneflow::cpu
