/* Thread safety: one session shared by several threads, concurrent dtype interning, concurrent random
 * draws, concurrent reads and releases of one tensor. cmocka's assertions are used on the main thread
 * only; worker threads count their failures and report them. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "capi_test_util.h"

#define NUM_THREADS 8

typedef struct {
  of_session_t* session;
  int index;
  int iterations;
  int failures;
  char first_failure[256];
  const of_dtype_t* seen[OF_TEST_NUM_DTYPES]; /* from the getters */
  const of_dtype_t* by_code[OF_TEST_NUM_DTYPES];
  const of_dtype_t* by_name[OF_TEST_NUM_DTYPES];
  const of_dtype_t* from_tensor[OF_TEST_NUM_DTYPES];
  int64_t symbol;
  void* result; /* per-test output */
  size_t result_len;
  const of_tensor_t* shared; /* per-test input */
  pthread_barrier_t* start;
} worker;

static void record_failure(worker* w, const char* what, of_status_t* status) {
  if (w->failures++ == 0) {
    snprintf(w->first_failure, sizeof w->first_failure, "thread %d: %s: %s", w->index, what,
             status ? of_status_message(status) : "");
  }
  of_status_destroy(status);
}

#define W_OK(w, expr)                                    \
  do {                                                   \
    of_status_t* st_ = (expr);                           \
    if (st_ != NULL) record_failure((w), #expr, st_);    \
  } while (0)
#define W_CHECK(w, cond)                                 \
  do {                                                   \
    if (!(cond)) record_failure((w), #cond, NULL);       \
  } while (0)

static void run_workers(worker* workers, void* (*fn)(void*)) {
  pthread_t threads[NUM_THREADS];
  pthread_barrier_t barrier;
  assert_int_equal(pthread_barrier_init(&barrier, NULL, NUM_THREADS), 0);
  for (int i = 0; i < NUM_THREADS; ++i) {
    workers[i].start = &barrier;
    assert_int_equal(pthread_create(&threads[i], NULL, fn, &workers[i]), 0);
  }
  for (int i = 0; i < NUM_THREADS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  pthread_barrier_destroy(&barrier);
  for (int i = 0; i < NUM_THREADS; ++i) {
    if (workers[i].failures != 0) fail_msg("%d failures; first: %s", workers[i].failures, workers[i].first_failure);
  }
}

static const char* const kNames[OF_TEST_NUM_DTYPES] = {"bool",  "int8",    "uint8",    "int16",   "int32",
                                                       "int64", "float16", "bfloat16", "float32", "float64"};

/* Creates, queries and releases tensors of every dtype in the shared session, interning dtypes. */
static void* tensor_worker(void* arg) {
  worker* w = (worker*)arg;
  pthread_barrier_wait(w->start);
  for (int it = 0; it < w->iterations; ++it) {
    for (int i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
      /* Interning from every entry point (the other threads do the same at the same time). */
      const of_dtype_t* d = of_test_dtype_getters[i]();
      if (it == 0) w->seen[i] = d;
      W_CHECK(w, d == w->seen[i]);
      const of_dtype_t* by_code = NULL;
      const of_dtype_t* by_name = NULL;
      W_OK(w, of_dtype_from_code(i + 1, &by_code));
      W_OK(w, of_dtype_from_name(kNames[i], &by_name));
      w->by_code[i] = by_code;
      w->by_name[i] = by_name;

      const int64_t dims[] = {3, it % 4 + 1};
      const int64_t numel = 3 * (it % 4 + 1);
      of_tensor_t* t = NULL;
      W_OK(w, of_tensor_ones(w->session, d, dims, 2, NULL, &t));
      if (t == NULL) continue;
      const of_dtype_t* td = NULL;
      int64_t n = 0;
      size_t nbytes = 0, ndim = 0;
      int64_t got[2] = {0, 0};
      W_OK(w, of_tensor_dtype(t, &td));
      W_OK(w, of_tensor_ndim(t, &ndim));
      W_OK(w, of_tensor_dims(t, got, 2));
      W_OK(w, of_tensor_numel(t, &n));
      W_OK(w, of_tensor_nbytes(t, &nbytes));
      w->from_tensor[i] = td;
      W_CHECK(w, td == d);
      W_CHECK(w, ndim == 2 && got[0] == 3 && got[1] == dims[1]);
      W_CHECK(w, n == numel);
      W_CHECK(w, nbytes == (size_t)numel * of_dtype_size(d));
      unsigned char buf[96];
      W_OK(w, of_tensor_copy_to_host(t, buf, nbytes));
      of_tensor_release(t);

      /* from_data round trip with thread-specific contents. */
      int32_t src[4] = {w->index, it, i, -w->index};
      int32_t back[4] = {0, 0, 0, 0};
      const int64_t d4[] = {4};
      of_tensor_t* u = NULL;
      W_OK(w, of_tensor_from_data(w->session, of_dtype_int32(), d4, 1, src, sizeof src, NULL, &u));
      if (u == NULL) continue;
      W_OK(w, of_tensor_copy_to_host(u, back, sizeof back));
      W_CHECK(w, memcmp(src, back, sizeof src) == 0);
      of_tensor_release(u);

      /* Errors are per call: each status carries its own message. */
      const of_dtype_t* none = NULL;
      of_status_t* st = of_dtype_from_code(100 + w->index, &none);
      char expected[32];
      snprintf(expected, sizeof expected, "%d", 100 + w->index);
      W_CHECK(w, st != NULL && strstr(of_status_message(st), expected) != NULL);
      of_status_destroy(st);
    }
    int64_t sym = 0;
    W_OK(w, of_session_dim_symbol(w->session, "N", &sym));
    if (it == 0) w->symbol = sym;
    W_CHECK(w, sym == w->symbol);
  }
  return NULL;
}

static void test_shared_session_tensors_and_dtypes(void** state) {
  of_session_t* s = (of_session_t*)*state;
  worker workers[NUM_THREADS];
  memset(workers, 0, sizeof workers);
  for (int i = 0; i < NUM_THREADS; ++i) {
    workers[i].session = s;
    workers[i].index = i;
    workers[i].iterations = 50;
  }
  run_workers(workers, tensor_worker);
  int64_t n = 0;
  ASSERT_OK(of_session_dim_symbol(s, "N", &n));
  for (int i = 0; i < NUM_THREADS; ++i) {
    for (int d = 0; d < OF_TEST_NUM_DTYPES; ++d) {
      const of_dtype_t* expected = of_test_dtype_getters[d]();
      assert_ptr_equal(workers[i].seen[d], expected);
      assert_ptr_equal(workers[i].by_code[d], expected);
      assert_ptr_equal(workers[i].by_name[d], expected);
      assert_ptr_equal(workers[i].from_tensor[d], expected);
    }
    assert_true(workers[i].symbol == n); /* one symbol per name per session, whichever thread asked first */
  }
}

#define RAND_N 4096

static void* rand_worker(void* arg) {
  worker* w = (worker*)arg;
  const int64_t dims[] = {RAND_N};
  pthread_barrier_wait(w->start);
  of_tensor_t* t = NULL;
  W_OK(w, of_tensor_rand(w->session, of_dtype_float32(), dims, 1, NULL, &t));
  if (t != NULL) {
    W_OK(w, of_tensor_copy_to_host(t, w->result, RAND_N * sizeof(float)));
    of_tensor_release(t);
  }
  return NULL;
}

typedef struct {
  uint64_t key; /* the bits of two consecutive values */
  int thread;
} pair_key;

static int compare_pair_keys(const void* a, const void* b) {
  const uint64_t x = ((const pair_key*)a)->key, y = ((const pair_key*)b)->key;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* The number of consecutive-value pairs that occur in the draws of two different threads. With
 * disjoint counter ranges that is (almost surely) 0; overlapping ranges share thousands. */
static size_t shared_pairs(const float* results, size_t per_thread) {
  const size_t count = NUM_THREADS * (per_thread - 1);
  pair_key* keys = malloc(count * sizeof(pair_key));
  assert_non_null(keys);
  size_t k = 0;
  for (int t = 0; t < NUM_THREADS; ++t) {
    const float* r = results + (size_t)t * per_thread;
    for (size_t i = 0; i + 1 < per_thread; ++i) {
      uint32_t hi, lo;
      memcpy(&hi, &r[i], sizeof hi);
      memcpy(&lo, &r[i + 1], sizeof lo);
      keys[k].key = (uint64_t)hi << 32 | lo;
      keys[k].thread = t;
      ++k;
    }
  }
  qsort(keys, count, sizeof(pair_key), compare_pair_keys);
  size_t shared = 0;
  for (size_t i = 1; i < count; ++i) {
    if (keys[i].key == keys[i - 1].key && keys[i].thread != keys[i - 1].thread) ++shared;
  }
  free(keys);
  return shared;
}

static void test_concurrent_rand_disjoint(void** state) {
  (void)state;
  of_session_t* s = of_test_session_seeded(2024);
  worker workers[NUM_THREADS];
  memset(workers, 0, sizeof workers);
  float* results = calloc((size_t)NUM_THREADS * RAND_N, sizeof(float));
  assert_non_null(results);
  for (int i = 0; i < NUM_THREADS; ++i) {
    workers[i].session = s;
    workers[i].index = i;
    workers[i].result = results + (size_t)i * RAND_N;
  }
  run_workers(workers, rand_worker);
  for (int i = 0; i < NUM_THREADS; ++i) {
    const float* a = results + (size_t)i * RAND_N;
    for (size_t k = 0; k < RAND_N; ++k) assert_true(a[k] >= 0.0f && a[k] < 1.0f);
    for (int j = 0; j < NUM_THREADS; ++j) {
      if (i == j) continue;
      const float* b = results + (size_t)j * RAND_N;
      assert_memory_not_equal(a, b, RAND_N * sizeof(float));
    }
  }
  /* Disjoint ranges: no two consecutive values of one draw show up in another, at any offset. */
  assert_int_equal(shared_pairs(results, RAND_N), 0);
  /* The concurrent draws used NUM_THREADS ranges: the next draw equals the draw after NUM_THREADS
   * sequential ones in a session with the same seed. */
  of_session_t* ref = of_test_session_seeded(2024);
  const int64_t dims[] = {RAND_N};
  for (int i = 0; i < NUM_THREADS; ++i) {
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_rand(ref, of_dtype_float32(), dims, 1, NULL, &t));
    of_tensor_release(t);
  }
  of_test_assert_same_next_rand(s, ref, 64);
  of_session_destroy(ref);
  free(results);
  of_session_destroy(s);
}

/* Reads one tensor from every thread, then each thread drops one of its references. */
static void* read_release_worker(void* arg) {
  worker* w = (worker*)arg;
  pthread_barrier_wait(w->start);
  for (int it = 0; it < 200; ++it) {
    size_t nbytes = 0;
    W_OK(w, of_tensor_nbytes(w->shared, &nbytes));
    W_CHECK(w, nbytes == w->result_len);
    W_OK(w, of_tensor_copy_to_host(w->shared, w->result, w->result_len));
    const of_dtype_t* d = NULL;
    W_OK(w, of_tensor_dtype(w->shared, &d));
    W_CHECK(w, d == of_dtype_int64());
  }
  of_tensor_release((of_tensor_t*)w->shared);
  return NULL;
}

typedef struct {
  int calls;
  void* data;
  void* user_data;
  pthread_mutex_t mutex;
} shared_log;

static void shared_deleter(void* data, void* user_data) {
  shared_log* log = (shared_log*)user_data;
  pthread_mutex_lock(&log->mutex);
  log->calls += 1;
  log->data = data;
  log->user_data = user_data;
  pthread_mutex_unlock(&log->mutex);
  free(data);
}

static void test_concurrent_reads_and_releases(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const size_t n = 1000;
  int64_t* data = malloc(n * sizeof(int64_t));
  assert_non_null(data);
  for (size_t i = 0; i < n; ++i) data[i] = (int64_t)i * 3 - 7;
  int64_t* expected = malloc(n * sizeof(int64_t));
  assert_non_null(expected);
  memcpy(expected, data, n * sizeof(int64_t));
  shared_log log = {0, NULL, NULL, PTHREAD_MUTEX_INITIALIZER};
  const int64_t dims[] = {(int64_t)n};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_int64(), dims, 1, data, n * sizeof(int64_t), shared_deleter, &log, &t));
  /* One reference per thread (the creation's reference is the first thread's). */
  for (int i = 1; i < NUM_THREADS; ++i) of_tensor_retain(t);

  worker workers[NUM_THREADS];
  memset(workers, 0, sizeof workers);
  int64_t* outs = calloc((size_t)NUM_THREADS * n, sizeof(int64_t));
  assert_non_null(outs);
  for (int i = 0; i < NUM_THREADS; ++i) {
    workers[i].index = i;
    workers[i].shared = t;
    workers[i].result = outs + (size_t)i * n;
    workers[i].result_len = n * sizeof(int64_t);
  }
  run_workers(workers, read_release_worker);
  for (int i = 0; i < NUM_THREADS; ++i) assert_memory_equal(outs + (size_t)i * n, expected, n * sizeof(int64_t));
  /* Every reference is gone: the deleter ran exactly once, on whichever thread released last. */
  assert_int_equal(log.calls, 1);
  assert_ptr_equal(log.data, data);
  assert_ptr_equal(log.user_data, &log);
  free(outs);
  free(expected);
}

/* Sessions made and destroyed concurrently, each used by its thread. */
static void* session_worker(void* arg) {
  worker* w = (worker*)arg;
  pthread_barrier_wait(w->start);
  for (int it = 0; it < 20; ++it) {
    of_session_options_t o;
    of_session_options_init(&o);
    o.seed = 77;
    of_session_t* s = NULL;
    W_OK(w, of_session_create(&o, &s));
    if (s == NULL) continue;
    int64_t sym = 0;
    W_OK(w, of_session_dim_symbol(s, "T", &sym));
    W_CHECK(w, of_dim_is_symbol(sym) == 1);
    const int64_t dims[] = {8};
    of_tensor_t* t = NULL;
    W_OK(w, of_tensor_rand(s, of_dtype_float32(), dims, 1, NULL, &t));
    of_session_destroy(s);
    if (t == NULL) continue;
    float v[8];
    W_OK(w, of_tensor_copy_to_host(t, v, sizeof v));
    if (it == 0) memcpy(w->result, v, sizeof v);
    W_CHECK(w, memcmp(w->result, v, sizeof v) == 0); /* same seed, first draw: always the same */
    of_tensor_release(t);
  }
  return NULL;
}

static void test_concurrent_sessions(void** state) {
  (void)state;
  worker workers[NUM_THREADS];
  memset(workers, 0, sizeof workers);
  float firsts[NUM_THREADS][8];
  for (int i = 0; i < NUM_THREADS; ++i) {
    workers[i].index = i;
    workers[i].result = firsts[i];
  }
  run_workers(workers, session_worker);
  for (int i = 1; i < NUM_THREADS; ++i) assert_memory_equal(firsts[i], firsts[0], sizeof firsts[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_shared_session_tensors_and_dtypes, of_test_setup_session,
                                      of_test_teardown_session),
      cmocka_unit_test(test_concurrent_rand_disjoint),
      cmocka_unit_test_setup_teardown(test_concurrent_reads_and_releases, of_test_setup_session,
                                      of_test_teardown_session),
      cmocka_unit_test(test_concurrent_sessions),
  };
  return cmocka_run_group_tests_name("capi.threads", tests, NULL, NULL);
}
