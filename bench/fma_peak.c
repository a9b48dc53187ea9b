/* Measures this CPU's fp32 peak: GFLOP/s of a loop of independent fused multiply-adds, on 1 thread and on
 * N threads (pthreads, one loop per thread, started together). The widest ISA the CPU has is used:
 * AVX-512F (16 floats per FMA) when __builtin_cpu_supports says so, AVX2+FMA (8 floats) otherwise; each
 * kernel is compiled for its ISA alone (__attribute__((target(...)))), so the program runs anywhere.
 * A kernel keeps kAccumulators independent accumulators (more than FMA latency x FMA ports on current
 * x86 cores), so that the loop is bound by FMA throughput; each FMA counts as 2 flops per lane. Each
 * measurement is the best of --repeats runs of about --ms milliseconds (the least disturbed by other
 * load). bench/compare_cpu.py reads the lines and compares the training steps' GFLOP/s with them.
 *
 *   fma_peak [--threads N] [--ms M] [--repeats R]      (N default: the online CPUs)
 *
 * Prints "fma_peak isa=avx512|avx2 threads=<t> gflops=<x>" for t = 1 and t = N. */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kAccumulators = 12 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* acc = acc * m + a on every accumulator, `iters` times: kAccumulators * 16 lanes * 2 flops per iteration.
 * m is just below 1 and a small, so the values stay finite and normal. Returns a sum of the lanes so that
 * the work cannot be optimised away. */
__attribute__((target("avx512f"))) static float kernel_avx512(int64_t iters, float seed) {
  __m512 acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_ps(seed + (float)k);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
  }
  float out = 0.0f;
  for (int k = 0; k < kAccumulators; ++k) out += _mm512_reduce_add_ps(acc[k]);
  return out;
}

/* The same with 8 lanes: kAccumulators * 8 lanes * 2 flops per iteration. */
__attribute__((target("avx2,fma"))) static float kernel_avx2(int64_t iters, float seed) {
  __m256 acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_set1_ps(seed + (float)k);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, a);
  }
  float lanes[8], out = 0.0f;
  for (int k = 0; k < kAccumulators; ++k) {
    _mm256_storeu_ps(lanes, acc[k]);
    for (int l = 0; l < 8; ++l) out += lanes[l];
  }
  return out;
}

static int g_avx512;    /* which kernel */
static int64_t g_iters; /* iterations per thread per run */

static double flops_per_iter(void) { return (double)kAccumulators * (g_avx512 ? 16 : 8) * 2.0; }

static float run_kernel(int64_t iters, float seed) {
  return g_avx512 ? kernel_avx512(iters, seed) : kernel_avx2(iters, seed);
}

typedef struct {
  pthread_barrier_t* start;
  float result;
} worker_t;

static void* worker(void* arg) {
  worker_t* w = arg;
  pthread_barrier_wait(w->start);
  w->result = run_kernel(g_iters, w->result);
  return NULL;
}

/* GFLOP/s of one run on `threads` threads: all start at a barrier, the wall time ends when the last one
 * is joined. */
static double measure(int threads, float* sink) {
  pthread_t* tids = calloc((size_t)threads, sizeof *tids);
  worker_t* ws = calloc((size_t)threads, sizeof *ws);
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; ++t) {
    ws[t] = (worker_t){.start = &start, .result = (float)t};
    if (pthread_create(&tids[t], NULL, worker, &ws[t]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      exit(1);
    }
  }
  pthread_barrier_wait(&start);
  const double t0 = now_s();
  for (int t = 0; t < threads; ++t) pthread_join(tids[t], NULL);
  const double elapsed = now_s() - t0;
  for (int t = 0; t < threads; ++t) *sink += ws[t].result;
  pthread_barrier_destroy(&start);
  free(tids);
  free(ws);
  return flops_per_iter() * (double)g_iters * threads / elapsed * 1e-9;
}

int main(int argc, char** argv) {
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), repeats = 5;
  double ms = 200.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--ms") == 0) ms = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--repeats") == 0) repeats = atoi(argv[i + 1]);
    else break;
  }
  if (argc % 2 == 0 || threads < 1 || repeats < 1 || !(ms > 0)) {
    fprintf(stderr, "usage: %s [--threads N] [--ms M] [--repeats R]\n", argv[0]);
    return 2;
  }
  __builtin_cpu_init();
  g_avx512 = __builtin_cpu_supports("avx512f");
  if (!g_avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    fprintf(stderr, "fma_peak: this CPU has neither AVX-512F nor AVX2+FMA\n");
    return 1;
  }
  /* Calibrate the iteration count to about `ms` on one thread. */
  float sink = 0.0f;
  g_iters = 1 << 20;
  double t0 = now_s();
  sink += run_kernel(g_iters, 1.0f);
  const double per_iter = (now_s() - t0) / (double)g_iters;
  g_iters = (int64_t)(ms * 1e-3 / per_iter) + 1;

  const int counts[2] = {1, threads};
  for (int c = 0; c < (threads > 1 ? 2 : 1); ++c) {
    double best = 0.0;
    for (int r = 0; r < repeats; ++r) {
      const double g = measure(counts[c], &sink);
      if (g > best) best = g;
    }
    printf("fma_peak isa=%s threads=%d gflops=%.1f\n", g_avx512 ? "avx512" : "avx2", counts[c], best);
    fflush(stdout);
  }
  return sink == 12345.0f; /* never true in practice; keeps `sink` alive */
}
