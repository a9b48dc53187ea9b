// oneDNN's sgemm (row-major, JIT-compiled for the machine) on the calling thread alone, or shared out over
// a session pool's threads (Note [Products on the pool's threads] in dnnl_common.cpp). A light header:
// the attention kernels include it without oneDNN's C++ API.
#pragma once

#include <cstdint>
#include <functional>

namespace oneflow {

class ThreadPool;

namespace dnnl_util {

// C (m x n, rows ldc apart) = alpha op(A) op(B) + beta C, all row-major, op transposing where `ta` / `tb`
// is 'T' (else 'N'), on the calling thread alone. The callers check the sizes; a failure of oneDNN is
// INTERNAL. Thread-safe (each thread its own call).
void SgemmAlone(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// C = op(A) op(B) + beta C as SgemmAlone (alpha 1), on `pool`'s threads, each running SgemmAlone on a share
// of C's rows or columns, or of the depth k (each share's sums then added into C in share order: the same
// bits at the same thread count). The calling thread takes part; called from inside the pool's
// ParallelFor, or while another thread's call holds the pool, it runs the product on the calling thread
// (the depth's shares one after the other), so it is safe to call from several threads at once. A, B and C stay
// the caller's; C must not overlap A or B.
void PoolSgemm(ThreadPool& pool, char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// A product summed over a depth k, shared out over `pool`'s threads as PoolSgemm shares its depth:
// product(k0, k1, beta, out, ldo) sets out (m x n, rows ldo apart) to the product over the depth [k0, k1)
// plus beta out, on the calling thread; share 0 sums into c with `beta`, the others into partials that are
// added into c after, in share order. Nesting and concurrent calls as PoolSgemm.
using DepthProduct = std::function<void(int64_t k0, int64_t k1, float beta, float* out, int64_t ldo)>;
void PoolDepthShares(ThreadPool& pool, int64_t m, int64_t n, int64_t k, float beta, float* c, int64_t ldc,
                     const DepthProduct& product);

}  // namespace dnnl_util
}  // namespace oneflow
