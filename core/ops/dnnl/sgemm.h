// oneDNN's sgemm (row-major, JIT-compiled for the machine) on the calling thread alone, or shared out over
// a session pool's threads (Note [Products on the pool's threads] in dnnl_common.cpp). A light header:
// the attention kernels include it without oneDNN's C++ API.
#pragma once

#include <cstdint>

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

}  // namespace dnnl_util
}  // namespace oneflow
