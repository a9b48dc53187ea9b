/* CMocka tests of lifetimes through the C ABI: every order of destroying and releasing handles is
 * correct (what a garbage collector in Java or Go does: it picks the order), whatever is left keeps
 * working, and adopted memory is handed back exactly once; a session whose threads cannot start fails
 * cleanly instead of hanging. Run under AddressSanitizer (the asan preset), a use after free or a
 * leak in any order fails the test. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capi_op_util.h"

/*===--- one world of handles --------------------------------------------------------------===*/

/* The handles a program holds at once: a session, a training graph (linear + cross-entropy, SGD with
 * momentum) and an inference graph that multiplies by a mask made during its build (a free tensor),
 * the optimizer, the two parameters, lazy handles from the builds, adopted batches, a run's output
 * and a list of tensors loaded from a safetensors file. */
enum {
  kSession,
  kTrainGraph,
  kInferGraph,
  kOptimizer,
  kWeight,
  kBias,
  kLazyInput,
  kLazyLoss,
  kBatchX,
  kBatchY,
  kInferInput,
  kLossValue,
  kTensorList,
  kObjectCount
};
static const char* const kObjectNames[kObjectCount] = {
    "session",   "train graph", "infer graph", "optimizer",   "weight",     "bias",       "lazy input",
    "lazy loss", "batch x",     "batch y",     "infer input", "loss value", "tensor list"};

enum { kBatch = 4, kIn = 3, kClasses = 2 };

typedef struct {
  of_session_t* session;
  of_graph_t* train;
  of_graph_t* infer;
  of_optimizer_t* optimizer;
  of_tensor_t* weight;
  of_tensor_t* bias;
  of_tensor_t* lazy_input;
  of_tensor_t* lazy_loss;
  of_tensor_t* batch_x;
  of_tensor_t* batch_y;
  of_tensor_t* infer_input;
  of_tensor_t* loss_value;
  of_tensor_list_t* list;
  int alive[kObjectCount];
  int deleted; /* adopted buffers handed back (batch x, batch y, infer input, the mask) */
} world;

static void count_delete(void* data, void* user_data) {
  free(data);
  ++*(int*)user_data;
}

/* A CPU float32 tensor over a malloc'ed copy of `values`, adopted with the counting deleter. */
static of_tensor_t* adopt_f32(world* w, const int64_t* dims, size_t ndim, const float* values, size_t n) {
  float* data = malloc(n * sizeof(float));
  assert_non_null(data);
  memcpy(data, values, n * sizeof(float));
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(w->session, F32, dims, ndim, data, n * sizeof(float), count_delete, &w->deleted, &t));
  return t;
}

static of_tensor_t* adopt_i64(world* w, const int64_t* values, size_t n) {
  int64_t* data = malloc(n * sizeof(int64_t));
  assert_non_null(data);
  memcpy(data, values, n * sizeof(int64_t));
  of_tensor_t* t = NULL;
  const int64_t dims[1] = {(int64_t)n};
  ASSERT_OK(of_tensor_adopt_data(w->session, I64, dims, 1, data, n * sizeof(int64_t), count_delete, &w->deleted, &t));
  return t;
}

static const char* safetensors_path(void) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/of_lifetimes_%ld.safetensors", (long)getpid());
  return path;
}

static void world_make(world* w) {
  memset(w, 0, sizeof *w);
  w->session = of_test_session();
  const float x[kBatch * kIn] = {0.5f, -1, 2, 1, 0, -0.5f, -2, 1.5f, 0.25f, 0, 1, 1};
  const int64_t y[kBatch] = {0, 1, 1, 0};
  const float w0[kClasses * kIn] = {0.1f, -0.2f, 0.3f, 0.0f, 0.2f, -0.1f};
  const float b0[kClasses] = {0.05f, -0.05f};
  ASSERT_OK(of_tensor_from_data(w->session, F32, DIMS(kClasses, kIn), w0, sizeof w0, NULL, &w->weight));
  ASSERT_OK(of_tensor_from_data(w->session, F32, DIMS(kClasses), b0, sizeof b0, NULL, &w->bias));
  ASSERT_OK(of_tensor_set_requires_grad(w->weight, 1));
  ASSERT_OK(of_tensor_set_requires_grad(w->bias, 1));
  of_sgd_options_t sgd;
  of_sgd_options_init(&sgd);
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  ASSERT_OK(of_optimizer_sgd_create(w->session, (of_tensor_t* const[]){w->weight, w->bias}, 2, &sgd, &w->optimizer));

  ASSERT_OK(of_graph_create(w->session, "train", NULL, &w->train));
  ASSERT_OK(of_graph_begin_build(w->train));
  of_tensor_t* ty = NULL;
  of_tensor_t* logits = NULL;
  ASSERT_OK(of_graph_add_input(w->train, "x", F32, DIMS(OF_DIM_UNKNOWN, kIn), &w->lazy_input));
  ASSERT_OK(of_graph_add_input(w->train, "y", I64, DIMS(OF_DIM_UNKNOWN), &ty));
  ASSERT_OK(of_linear(w->session, w->lazy_input, w->weight, w->bias, &logits));
  ASSERT_OK(of_cross_entropy(w->session, logits, ty, NULL, &w->lazy_loss));
  ASSERT_OK(of_tensor_backward(w->session, w->lazy_loss, NULL, 0));
  ASSERT_OK(of_graph_add_optimizer(w->train, w->optimizer));
  ASSERT_OK(of_graph_add_output(w->train, w->lazy_loss));
  ASSERT_OK(of_graph_end_build(w->train));
  of_tensor_release(ty);
  of_tensor_release(logits);

  /* The inference graph: y = x * mask, the mask adopted during the build and released at once, so
   * that only the session's store holds it for the graph. */
  ASSERT_OK(of_graph_create(w->session, "infer", NULL, &w->infer));
  ASSERT_OK(of_graph_begin_build(w->infer));
  of_tensor_t* ix = NULL;
  of_tensor_t* iy = NULL;
  ASSERT_OK(of_graph_add_input(w->infer, "x", F32, DIMS(OF_DIM_UNKNOWN, kIn), &ix));
  const float mask[kIn] = {1, 0, 2};
  of_tensor_t* m = adopt_f32(w, DIMS(kIn), mask, kIn);
  ASSERT_OK(of_mul(w->session, ix, m, &iy));
  of_tensor_release(m);
  ASSERT_OK(of_graph_add_output(w->infer, iy));
  ASSERT_OK(of_graph_end_build(w->infer));
  of_tensor_release(ix);
  of_tensor_release(iy);

  w->batch_x = adopt_f32(w, DIMS(kBatch, kIn), x, kBatch * kIn);
  w->batch_y = adopt_i64(w, y, kBatch);
  w->infer_input = adopt_f32(w, DIMS(kBatch, kIn), x, kBatch * kIn);
  ASSERT_OK(of_graph_run(w->train, (const of_tensor_t* const[]){w->batch_x, w->batch_y}, 2, &w->loss_value, 1));

  ASSERT_OK(of_safetensors_save(safetensors_path(), (const char* const[]){"weight", "bias"},
                                (const of_tensor_t* const[]){w->weight, w->bias}, 2));
  ASSERT_OK(of_safetensors_load(w->session, safetensors_path(), &w->list));
  remove(safetensors_path());
  for (int i = 0; i < kObjectCount; ++i) w->alive[i] = 1;
}

static void world_destroy(world* w, int object) {
  switch (object) {
    case kSession: of_session_destroy(w->session); break;
    case kTrainGraph: of_graph_destroy(w->train); break;
    case kInferGraph: of_graph_destroy(w->infer); break;
    case kOptimizer: of_optimizer_destroy(w->optimizer); break;
    case kWeight: of_tensor_release(w->weight); break;
    case kBias: of_tensor_release(w->bias); break;
    case kLazyInput: of_tensor_release(w->lazy_input); break;
    case kLazyLoss: of_tensor_release(w->lazy_loss); break;
    case kBatchX: of_tensor_release(w->batch_x); break;
    case kBatchY: of_tensor_release(w->batch_y); break;
    case kInferInput: of_tensor_release(w->infer_input); break;
    case kLossValue: of_tensor_release(w->loss_value); break;
    case kTensorList: of_tensor_list_destroy(w->list); break;
    default: fail();
  }
  w->alive[object] = 0;
}

static float first_float(const of_tensor_t* t, size_t nbytes) {
  float buf[kBatch * kIn];
  assert_true(nbytes <= sizeof buf);
  ASSERT_OK(of_tensor_copy_to_host(t, buf, nbytes));
  return buf[0];
}

/* Uses every handle still alive; each use must succeed and give the right kind of result. */
static void world_exercise(world* w) {
  if (w->alive[kTrainGraph] && w->alive[kBatchX] && w->alive[kBatchY]) {
    of_tensor_t* loss = NULL;
    ASSERT_OK(of_graph_run(w->train, (const of_tensor_t* const[]){w->batch_x, w->batch_y}, 2, &loss, 1));
    const float value = first_float(loss, sizeof(float));
    assert_true(value > 0 && value < 10);
    of_tensor_release(loss);
  }
  if (w->alive[kInferGraph] && w->alive[kInferInput]) {
    of_tensor_t* y = NULL;
    ASSERT_OK(of_graph_run(w->infer, (const of_tensor_t* const[]){w->infer_input}, 1, &y, 1));
    float got[kBatch * kIn];
    ASSERT_OK(of_tensor_copy_to_host(y, got, sizeof got));
    assert_true(got[0] == 0.5f && got[1] == 0.0f && got[2] == 4.0f); /* x row 0 times the mask */
    of_tensor_release(y);
    size_t n = 0;
    ASSERT_OK(of_graph_free_tensor_count(w->infer, &n));
    assert_int_equal(n, 1);
  }
  if (w->alive[kOptimizer]) {
    double lr = 0;
    ASSERT_OK(of_optimizer_lr(w->optimizer, &lr));
    assert_true(lr == 0.1);
    ASSERT_OK(of_optimizer_zero_grad(w->optimizer));
  }
  if (w->alive[kWeight]) assert_true(isfinite(first_float(w->weight, kClasses * kIn * sizeof(float))));
  if (w->alive[kBias]) assert_true(isfinite(first_float(w->bias, kClasses * sizeof(float))));
  const int lazy[2] = {kLazyInput, kLazyLoss};
  for (int k = 0; k < 2; ++k) {
    if (!w->alive[lazy[k]]) continue;
    const of_tensor_t* t = k == 0 ? w->lazy_input : w->lazy_loss;
    int32_t is_lazy = 0;
    ASSERT_OK(of_tensor_is_lazy(t, &is_lazy));
    assert_int_equal(is_lazy, 1);
    float sink = 0;
    ASSERT_STATUS(of_tensor_copy_to_host(t, &sink, sizeof sink), OF_STATUS_FAILED_PRECONDITION, "lazy");
  }
  if (w->alive[kBatchX]) assert_true(first_float(w->batch_x, kBatch * kIn * sizeof(float)) == 0.5f);
  if (w->alive[kLossValue]) assert_true(first_float(w->loss_value, sizeof(float)) > 0);
  if (w->alive[kTensorList]) {
    assert_int_equal(of_tensor_list_count(w->list), 2);
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_list_get(w->list, 1, &t));
    assert_true(isfinite(first_float(t, kClasses * sizeof(float))));
    of_tensor_release(t);
  }
  if (w->alive[kSession]) {
    of_tensor_t* z = NULL;
    ASSERT_OK(of_tensor_zeros(w->session, F32, DIMS(2), NULL, &z));
    of_tensor_release(z);
  }
}

/* Destroys the world's handles in `order` (a permutation of the objects), using what is left after
 * each step; at the end every adopted buffer has been handed back exactly once. */
static void run_order(const int* order) {
  world w;
  world_make(&w);
  world_exercise(&w);
  for (int i = 0; i < kObjectCount; ++i) {
    world_destroy(&w, order[i]);
    world_exercise(&w);
  }
  if (w.deleted != 4) {
    print_error("%d of the 4 adopted buffers were handed back; order:", w.deleted);
    for (int i = 0; i < kObjectCount; ++i) print_error(" %s,", kObjectNames[order[i]]);
    print_error("\n");
    fail();
  }
}

/*===--- tests ------------------------------------------------------------------------------===*/

static void test_session_first_graphs_keep_working(void** state) {
  (void)state;
  /* The order the header used to forbid: the session first, then everything else. */
  int order[kObjectCount];
  for (int i = 0; i < kObjectCount; ++i) order[i] = i;
  run_order(order);
}

static void test_fixed_orders(void** state) {
  (void)state;
  int backward[kObjectCount];
  for (int i = 0; i < kObjectCount; ++i) backward[i] = kObjectCount - 1 - i;
  run_order(backward); /* the disciplined order: everything before the session */
  /* The optimizer and the parameters before the graph that updates them, then the session. */
  const int params_first[kObjectCount] = {kOptimizer, kWeight,    kBias,      kSession,  kLossValue,
                                          kBatchY,    kTrainGraph, kLazyLoss, kInferInput, kInferGraph,
                                          kTensorList, kLazyInput, kBatchX};
  run_order(params_first);
}

/* A small deterministic generator, so that a failing order can be replayed. */
static uint64_t next_random(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void test_random_orders(void** state) {
  (void)state;
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  for (int round = 0; round < 150; ++round) {
    int order[kObjectCount];
    for (int i = 0; i < kObjectCount; ++i) order[i] = i;
    for (int i = kObjectCount - 1; i > 0; --i) {
      const int j = (int)(next_random(&seed) % (uint64_t)(i + 1));
      const int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    run_order(order);
  }
}

/* A build goes on after its session handle is destroyed: the graph holds the session. */
static void test_build_outlives_session_handle(void** state) {
  (void)state;
  of_session_t* s = of_test_session();
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "orphan", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(OF_DIM_UNKNOWN), &x));
  /* Made before the session goes: an eager input for the run. */
  of_tensor_t* batch = NULL;
  ASSERT_OK(of_tensor_from_data(s, F32, DIMS(3), (const float[]){1, 2, 3}, 3 * sizeof(float), NULL, &batch));
  of_session_destroy(s);
  ASSERT_OK(of_graph_add_output(g, x));
  ASSERT_OK(of_graph_end_build(g));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){batch}, 1, &y, 1));
  EXPECT_TENSOR(y, F32, DIMS(3), VALS(1, 2, 3), 0);
  of_tensor_release(y);
  of_tensor_release(batch);
  of_tensor_release(x);
  of_graph_destroy(g);
}

/*===--- a session whose threads cannot start -----------------------------------------------===*/

/* AddressSanitizer reserves terabytes of address space, so RLIMIT_AS cannot be used with it. */
#if !defined(__SANITIZE_ADDRESS__)

/* The calling process's thread count (Linux /proc), or -1. */
static int thread_count(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  }
  fclose(f);
  return n;
}

/* The process's virtual size in bytes, or 0. */
static size_t virtual_bytes(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  unsigned long pages = 0;
  const int got = fscanf(f, "%lu", &pages);
  fclose(f);
  return got == 1 ? (size_t)pages * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

/* In a child process (the address-space limit must not reach the test runner): a session of 1000
 * threads under a limit that lets only a few thread stacks be mapped. It must return
 * RESOURCE_EXHAUSTED naming the threads, within the alarm, with no thread left running. Exit codes:
 * 0 pass, 2 wrong status, 3 threads left, 4 could not set the limit. */
static int child_session_under_limit(void) {
  alarm(60); /* a hang becomes SIGALRM */
  struct rlimit limit;
  limit.rlim_cur = limit.rlim_max = virtual_bytes() + (64u << 20);
  if (virtual_bytes() == 0 || setrlimit(RLIMIT_AS, &limit) != 0) return 4;
  of_session_options_t options;
  of_session_options_init(&options);
  options.num_threads = 1000;
  of_session_t* s = NULL;
  of_status_t* st = of_session_create(&options, &s);
  const int ok = st != NULL && of_status_code(st) == OF_STATUS_RESOURCE_EXHAUSTED &&
                 of_test_contains_word(of_status_message(st), "thread") && s == NULL;
  if (!ok) {
    fprintf(stderr, "session under the limit: %s: %s\n", of_status_code_name(of_status_code(st)), of_status_message(st));
  }
  of_status_destroy(st);
  if (!ok) return 2;
  if (thread_count() != 1) {
    fprintf(stderr, "%d threads are running after the failed create\n", thread_count());
    return 3;
  }
  return 0;
}

#endif

static void test_thread_start_failure_is_resource_exhausted(void** state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__)
  skip();
#else
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(child_session_under_limit());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status)) {
    print_error("the child died of signal %d%s\n", WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (of_session_create hung)" : "");
    fail();
  }
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_session_first_graphs_keep_working),
      cmocka_unit_test(test_fixed_orders),
      cmocka_unit_test(test_random_orders),
      cmocka_unit_test(test_build_outlives_session_handle),
      cmocka_unit_test(test_thread_start_failure_is_resource_exhausted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
