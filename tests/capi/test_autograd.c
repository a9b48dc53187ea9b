/* CMocka tests of the autograd section of the C ABI: requires_grad and leaves, backward with implicit
 * and explicit gradients, accumulation, retain_graph and the second-backward error, per-thread grad
 * mode, autocast, detach, set_grad checks, and gradients through ops checked against values worked out
 * here. */
#include <pthread.h>

#include "capi_op_util.h"

static int32_t requires_grad(const of_tensor_t* t) {
  int32_t v = -1;
  ASSERT_OK(of_tensor_requires_grad(t, &v));
  return v;
}
static int32_t is_leaf(const of_tensor_t* t) {
  int32_t v = -1;
  ASSERT_OK(of_tensor_is_leaf(t, &v));
  return v;
}
static int32_t grad_enabled(void) {
  int32_t v = -1;
  ASSERT_OK(of_grad_is_enabled(&v));
  return v;
}
/* The tensor's grad (a new reference), or NULL. */
static of_tensor_t* grad_of(const of_tensor_t* t) {
  of_tensor_t* g = OUT_SENTINEL;
  ASSERT_OK(of_tensor_grad(t, &g));
  assert_ptr_not_equal(g, OUT_SENTINEL);
  return g;
}
#define EXPECT_GRAD(t, ...)              \
  do {                                   \
    of_tensor_t* g_ = grad_of(t);        \
    EXPECT_TENSOR(g_, __VA_ARGS__);      \
    of_tensor_release(g_);               \
  } while (0)

/* sum(x * x), a new reference. */
static of_tensor_t* sum_of_squares(of_session_t* s, const of_tensor_t* x) {
  of_tensor_t* sq = NULL;
  ASSERT_OK(of_mul(s, x, x, &sq));
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_sum(s, sq, NULL, 0, 0, &loss));
  of_tensor_release(sq);
  return loss;
}

static void test_requires_grad_and_leaves(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  assert_int_equal(requires_grad(x), 0);
  assert_int_equal(is_leaf(x), 1);
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  assert_int_equal(requires_grad(x), 1);
  assert_int_equal(is_leaf(x), 1);
  ASSERT_OK(of_tensor_set_requires_grad(x, 0));
  assert_int_equal(requires_grad(x), 0);
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));

  /* An op on it makes a non-leaf that requires grad; an op on tensors that do not stays a leaf. */
  of_tensor_t* y = NULL;
  ASSERT_OK(of_mul_scalar(s, x, 2, &y));
  assert_int_equal(requires_grad(y), 1);
  assert_int_equal(is_leaf(y), 0);
  ASSERT_STATUS(of_tensor_set_requires_grad(y, 0), OF_STATUS_INVALID_ARGUMENT, "of_tensor_set_requires_grad");
  of_tensor_t* c = make_tensor(s, F32, DIMS(2), VALS(3, 4));
  of_tensor_t* z = NULL;
  ASSERT_OK(of_add(s, c, c, &z));
  assert_int_equal(requires_grad(z), 0);
  assert_int_equal(is_leaf(z), 1);
  /* Non-differentiable results (comparisons) do not require grad. */
  of_tensor_t* cmp = NULL;
  ASSERT_OK(of_gt_scalar(s, x, 1.5, &cmp));
  assert_int_equal(requires_grad(cmp), 0);

  /* Errors: integer tensors, flags other than 0/1, NULL handles; outputs untouched. */
  of_tensor_t* i = make_tensor(s, I64, DIMS(1), VALS(1));
  ASSERT_STATUS(of_tensor_set_requires_grad(i, 1), OF_STATUS_INVALID_ARGUMENT, "of_tensor_set_requires_grad");
  assert_int_equal(requires_grad(i), 0);
  ASSERT_STATUS(of_tensor_set_requires_grad(c, 2), OF_STATUS_INVALID_ARGUMENT, "requires_grad");
  assert_int_equal(requires_grad(c), 0);
  ASSERT_STATUS(of_tensor_set_requires_grad(NULL, 1), OF_STATUS_INVALID_ARGUMENT, "tensor");
  int32_t out = 77;
  ASSERT_STATUS(of_tensor_requires_grad(NULL, &out), OF_STATUS_INVALID_ARGUMENT, "tensor");
  ASSERT_STATUS(of_tensor_is_leaf(NULL, &out), OF_STATUS_INVALID_ARGUMENT, "tensor");
  assert_int_equal(out, 77);
  ASSERT_STATUS(of_tensor_requires_grad(x, NULL), OF_STATUS_INVALID_ARGUMENT, "out_requires_grad");
  ASSERT_STATUS(of_tensor_is_leaf(x, NULL), OF_STATUS_INVALID_ARGUMENT, "out_is_leaf");

  of_tensor_release(x);
  of_tensor_release(y);
  of_tensor_release(c);
  of_tensor_release(z);
  of_tensor_release(cmp);
  of_tensor_release(i);
}

static void test_backward_accumulates(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(3), VALS(1, -2, 3));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  assert_null(grad_of(x));

  of_tensor_t* loss = sum_of_squares(s, x);
  assert_int_equal(is_leaf(loss), 0);
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(x, F64, DIMS(3), VALS(2, -4, 6), 0);
  assert_null(grad_of(loss)); /* only leaves get a grad */

  /* A grad handed out is never written afterwards: the next backward stores a new sum. */
  of_tensor_t* first = grad_of(x);
  of_tensor_t* loss2 = sum_of_squares(s, x);
  ASSERT_OK(of_tensor_backward(s, loss2, NULL, 0));
  EXPECT_GRAD(x, F64, DIMS(3), VALS(4, -8, 12), 0);
  EXPECT_TENSOR(first, F64, DIMS(3), VALS(2, -4, 6), 0);

  /* Clearing (zero_grad). */
  ASSERT_OK(of_tensor_set_grad(x, NULL));
  assert_null(grad_of(x));

  of_tensor_release(x);
  of_tensor_release(loss);
  of_tensor_release(loss2);
  of_tensor_release(first);
}

static void test_retain_graph(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2), VALS(1.5, -1));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_tensor_t* loss = sum_of_squares(s, x);
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 1));
  EXPECT_GRAD(x, F32, DIMS(2), VALS(3, -2), 0);
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(x, F32, DIMS(2), VALS(6, -4), 0);
  /* The graph's saved tensors are gone: a clear error, and the grad is unchanged. */
  ASSERT_STATUS(of_tensor_backward(s, loss, NULL, 0), OF_STATUS_FAILED_PRECONDITION, "of_tensor_backward");
  EXPECT_GRAD(x, F32, DIMS(2), VALS(6, -4), 0);
  ASSERT_STATUS(of_tensor_backward(s, loss, NULL, 2), OF_STATUS_INVALID_ARGUMENT, "retain_graph");
  of_tensor_release(x);
  of_tensor_release(loss);
}

static void test_explicit_grad(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(3), VALS(1, 2, 3));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_mul_scalar(s, x, 3, &y));
  /* An implicit gradient needs a single element. */
  ASSERT_STATUS(of_tensor_backward(s, y, NULL, 1), OF_STATUS_INVALID_ARGUMENT, "of_tensor_backward");
  of_tensor_t* wrong_shape = make_tensor(s, F32, DIMS(2), VALS(1, 1));
  of_tensor_t* wrong_dtype = make_tensor(s, F64, DIMS(3), VALS(1, 1, 1));
  ASSERT_STATUS(of_tensor_backward(s, y, wrong_shape, 1), OF_STATUS_INVALID_ARGUMENT, "of_tensor_backward");
  ASSERT_STATUS(of_tensor_backward(s, y, wrong_dtype, 1), OF_STATUS_INVALID_ARGUMENT, "of_tensor_backward");
  assert_null(grad_of(x));
  of_tensor_t* g = make_tensor(s, F32, DIMS(3), VALS(1, 2, -1));
  ASSERT_OK(of_tensor_backward(s, y, g, 0));
  EXPECT_GRAD(x, F32, DIMS(3), VALS(3, 6, -3), 0);
  of_tensor_release(x);
  of_tensor_release(y);
  of_tensor_release(wrong_shape);
  of_tensor_release(wrong_dtype);
  of_tensor_release(g);
}

/* A leaf's grad is its own tensor, never the caller's gradient (nor the leaf itself): x.backward(x)
 * used to make x its own grad, a reference cycle that leaked x (LeakSanitizer sees it in the asan
 * build, also for an empty x), and a caller's gradient reaching a leaf unchanged was stored as the grad
 * itself. */
static void test_leaf_grad_is_not_the_callers_tensor(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_tensor_backward(s, x, x, 0));
  EXPECT_GRAD(x, F32, DIMS(2), VALS(1, 2), 0);
  ASSERT_OK(of_init_constant(s, x, 5));
  EXPECT_GRAD(x, F32, DIMS(2), VALS(1, 2), 0); /* not an alias of x */
  /* Through an identity backward (add's): the caller's gradient arrives unchanged. */
  of_tensor_t* w = make_tensor(s, F32, DIMS(2), VALS(0, 0));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_add(s, w, x, &y));
  of_tensor_t* g = make_tensor(s, F32, DIMS(2), VALS(3, 4));
  ASSERT_OK(of_tensor_backward(s, y, g, 0));
  EXPECT_GRAD(w, F32, DIMS(2), VALS(3, 4), 0);
  ASSERT_OK(of_init_constant(s, g, 9));
  EXPECT_GRAD(w, F32, DIMS(2), VALS(3, 4), 0);
  of_tensor_release(g);
  of_tensor_release(y);
  of_tensor_release(w);
  of_tensor_release(x);
  /* An empty x shares no memory with itself, and was still made its own grad (fuzz_ops found the leak). */
  const int64_t empty_dims[2] = {0, 3};
  of_tensor_t *e = NULL, *ge = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float64(), empty_dims, 2, NULL, &e));
  ASSERT_OK(of_tensor_set_requires_grad(e, 1));
  ASSERT_OK(of_tensor_backward(s, e, e, 0));
  ASSERT_OK(of_tensor_grad(e, &ge));
  assert_non_null(ge);
  of_tensor_release(ge);
  of_tensor_release(e);
}

struct thread_probe {
  of_session_t* session;
  of_tensor_t* x;
  int32_t enabled;
  int32_t result_is_leaf;
};

static void* probe_grad_mode(void* arg) {
  struct thread_probe* p = arg;
  p->enabled = -1;
  p->result_is_leaf = -1;
  of_status_t* st = of_grad_is_enabled(&p->enabled);
  of_tensor_t* y = NULL;
  if (st == NULL) st = of_mul(p->session, p->x, p->x, &y);
  if (st == NULL) st = of_tensor_is_leaf(y, &p->result_is_leaf);
  of_status_destroy(st);
  of_tensor_release(y);
  return NULL;
}

static void test_no_grad_mode(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  assert_int_equal(grad_enabled(), 1);

  int32_t previous = -1;
  ASSERT_OK(of_grad_set_enabled(0, &previous));
  assert_int_equal(previous, 1);
  assert_int_equal(grad_enabled(), 0);
  /* Nothing is recorded: the result is a leaf that does not require grad, and cannot be backwarded. */
  of_tensor_t* loss = sum_of_squares(s, x);
  assert_int_equal(is_leaf(loss), 1);
  assert_int_equal(requires_grad(loss), 0);
  ASSERT_STATUS(of_tensor_backward(s, loss, NULL, 0), OF_STATUS_INVALID_ARGUMENT, "of_tensor_backward");

  /* Grad mode belongs to the calling thread: another thread still records. */
  struct thread_probe probe = {s, x, -1, -1};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, probe_grad_mode, &probe), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(probe.enabled, 1);
  assert_int_equal(probe.result_is_leaf, 0);
  assert_int_equal(grad_enabled(), 0);

  ASSERT_STATUS(of_grad_set_enabled(2, &previous), OF_STATUS_INVALID_ARGUMENT, "enabled");
  assert_int_equal(previous, 1);
  assert_int_equal(grad_enabled(), 0);
  ASSERT_OK(of_grad_set_enabled(1, NULL));
  assert_int_equal(grad_enabled(), 1);
  ASSERT_OK(of_grad_set_enabled(1, &previous));
  assert_int_equal(previous, 1);
  ASSERT_STATUS(of_grad_is_enabled(NULL), OF_STATUS_INVALID_ARGUMENT, "out_enabled");

  of_tensor_release(x);
  of_tensor_release(loss);
}

static void test_detach(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(3), VALS(1, 2, 3));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_mul_scalar(s, x, 2, &y));
  of_tensor_t* d = NULL;
  ASSERT_OK(of_tensor_detach(y, &d));
  assert_ptr_not_equal(d, y);
  assert_int_equal(is_leaf(d), 1);
  assert_int_equal(requires_grad(d), 0);
  assert_int_equal(is_leaf(y), 0); /* y itself is unchanged */
  of_test_assert_same_bytes(d, y);

  /* sum(d * x): the gradient reaches x only directly (d is a constant 2x), so x.grad = d. */
  of_tensor_t* p = NULL;
  ASSERT_OK(of_mul(s, d, x, &p));
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_sum(s, p, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(x, F32, DIMS(3), VALS(2, 4, 6), 0);

  of_tensor_t* out = OUT_SENTINEL;
  ASSERT_STATUS(of_tensor_detach(NULL, &out), OF_STATUS_INVALID_ARGUMENT, "of_tensor_detach", "tensor");
  assert_ptr_equal(out, OUT_SENTINEL);
  ASSERT_STATUS(of_tensor_detach(x, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");

  of_tensor_release(x);
  of_tensor_release(y);
  of_tensor_release(d);
  of_tensor_release(p);
  of_tensor_release(loss);
}

static void test_set_grad(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 2), VALS(1, 2, 3, 4));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_tensor_t* wrong_shape = make_tensor(s, F32, DIMS(4), VALS(1, 1, 1, 1));
  of_tensor_t* wrong_dtype = make_tensor(s, F64, DIMS(2, 2), VALS(1, 1, 1, 1));
  ASSERT_STATUS(of_tensor_set_grad(x, wrong_shape), OF_STATUS_INVALID_ARGUMENT, "of_tensor_set_grad", "(4,)",
                "(2, 2)");
  ASSERT_STATUS(of_tensor_set_grad(x, wrong_dtype), OF_STATUS_INVALID_ARGUMENT, "of_tensor_set_grad", "float64",
                "float32");
  assert_null(grad_of(x));
  ASSERT_STATUS(of_tensor_set_grad(NULL, wrong_shape), OF_STATUS_INVALID_ARGUMENT, "tensor");

  /* A lazy tensor (a graph value: no data) is refused as a grad: a later optimizer step could not
   * read it. The grad stays as it was. */
  of_graph_t* graph = NULL;
  ASSERT_OK(of_graph_create(s, "grads", NULL, &graph));
  ASSERT_OK(of_graph_begin_build(graph));
  of_tensor_t* lazy = NULL;
  ASSERT_OK(of_graph_add_input(graph, "g", F32, DIMS(2, 2), &lazy));
  ASSERT_STATUS(of_tensor_set_grad(x, lazy), OF_STATUS_FAILED_PRECONDITION, "of_tensor_set_grad", "grad", "lazy");
  assert_null(grad_of(x));
  ASSERT_STATUS(of_tensor_set_grad(lazy, x), OF_STATUS_FAILED_PRECONDITION, "of_tensor_set_grad", "tensor", "lazy");
  of_tensor_release(lazy);
  of_graph_destroy(graph);

  /* A set grad is where backward accumulates; the given tensor itself is not written. */
  of_tensor_t* g = make_tensor(s, F32, DIMS(2, 2), VALS(1, 2, 3, 4));
  ASSERT_OK(of_tensor_set_grad(x, g));
  EXPECT_GRAD(x, F32, DIMS(2, 2), VALS(1, 2, 3, 4), 0);
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_sum(s, x, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(x, F32, DIMS(2, 2), VALS(2, 3, 4, 5), 0);
  EXPECT_TENSOR(g, F32, DIMS(2, 2), VALS(1, 2, 3, 4), 0);

  /* A tensor may be its own grad without a reference cycle (the leak check of the ASan build). */
  ASSERT_OK(of_tensor_set_grad(x, x));
  EXPECT_GRAD(x, F32, DIMS(2, 2), VALS(1, 2, 3, 4), 0);
  ASSERT_OK(of_tensor_set_grad(g, x));
  ASSERT_OK(of_tensor_set_grad(x, g));

  of_tensor_t* out = OUT_SENTINEL;
  ASSERT_STATUS(of_tensor_grad(NULL, &out), OF_STATUS_INVALID_ARGUMENT, "of_tensor_grad", "tensor");
  assert_ptr_equal(out, OUT_SENTINEL);
  ASSERT_STATUS(of_tensor_grad(x, NULL), OF_STATUS_INVALID_ARGUMENT, "out_grad");

  of_tensor_release(x);
  of_tensor_release(wrong_shape);
  of_tensor_release(wrong_dtype);
  of_tensor_release(g);
  of_tensor_release(loss);
}

/* sum(linear(x, w, b)): dw[o][i] = sum over the batch of x[n][i], db[o] = N; x gets sum over o of w. */
static void test_linear_gradients(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* w = make_tensor(s, F32, DIMS(2, 3), VALS(1, 0, 0, 0, 1, 1));
  of_tensor_t* b = make_tensor(s, F32, DIMS(2), VALS(0.5, -1));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  ASSERT_OK(of_tensor_set_requires_grad(b, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_linear(s, x, w, b, &y));
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(w, F32, DIMS(2, 3), VALS(5, 7, 9, 5, 7, 9), 1e-6);
  EXPECT_GRAD(b, F32, DIMS(2), VALS(2, 2), 1e-6);
  EXPECT_GRAD(x, F32, DIMS(2, 3), VALS(1, 1, 1, 1, 1, 1), 1e-6);
  of_tensor_release(x);
  of_tensor_release(w);
  of_tensor_release(b);
  of_tensor_release(y);
  of_tensor_release(loss);
}

static const of_dtype_t* autocast_dtype(void) {
  const of_dtype_t* d = (const of_dtype_t*)OUT_SENTINEL;
  ASSERT_OK(of_autocast_get(&d));
  return d;
}
static const of_dtype_t* dtype_of(const of_tensor_t* t) {
  const of_dtype_t* d = NULL;
  ASSERT_OK(of_tensor_dtype(t, &d));
  return d;
}

/* Under bfloat16 autocast, linear runs in bfloat16 on the float32 parameters, cross_entropy in float32,
 * and the float32 parameters get float32 gradients: the linear test's values (exact in bfloat16). */
static void test_autocast(void** state) {
  of_session_t* s = *state;
  assert_null(autocast_dtype());
  const of_dtype_t* previous = (const of_dtype_t*)OUT_SENTINEL;
  ASSERT_OK(of_autocast_set(of_dtype_bfloat16(), &previous));
  assert_null(previous);
  assert_ptr_equal(autocast_dtype(), of_dtype_bfloat16());

  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* w = make_tensor(s, F32, DIMS(2, 3), VALS(1, 0, 0, 0, 1, 1));
  of_tensor_t* b = make_tensor(s, F32, DIMS(2), VALS(0.5, -1));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  ASSERT_OK(of_tensor_set_requires_grad(b, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_linear(s, x, w, b, &y));
  EXPECT_TENSOR(y, of_dtype_bfloat16(), DIMS(2, 2), VALS(1.5, 4, 4.5, 10), 0);
  of_tensor_t* sm = NULL;
  ASSERT_OK(of_softmax(s, y, 1, &sm));
  assert_ptr_equal(dtype_of(sm), F32);
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  assert_ptr_equal(dtype_of(loss), of_dtype_bfloat16()); /* sum is not cast: it runs in its input's dtype */
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(w, F32, DIMS(2, 3), VALS(5, 7, 9, 5, 7, 9), 0);
  EXPECT_GRAD(b, F32, DIMS(2), VALS(2, 2), 0);

  /* float16 is the other autocast dtype; anything else is refused and changes nothing. */
  ASSERT_OK(of_autocast_set(of_dtype_float16(), &previous));
  assert_ptr_equal(previous, of_dtype_bfloat16());
  ASSERT_STATUS(of_autocast_set(F32, &previous), OF_STATUS_INVALID_ARGUMENT, "of_autocast_set", "float32");
  assert_ptr_equal(autocast_dtype(), of_dtype_float16());
  ASSERT_STATUS(of_autocast_get(NULL), OF_STATUS_INVALID_ARGUMENT, "out_dtype");
  ASSERT_OK(of_autocast_set(NULL, &previous));
  assert_ptr_equal(previous, of_dtype_float16());
  assert_null(autocast_dtype());
  of_tensor_t* y32 = NULL;
  ASSERT_OK(of_linear(s, x, w, b, &y32));
  assert_ptr_equal(dtype_of(y32), F32);

  of_tensor_t* tensors[] = {x, w, b, y, sm, loss, y32};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
}

/* mean cross-entropy: d logits = (softmax(logits) - onehot(target)) / N. */
static void test_cross_entropy_gradient(void** state) {
  of_session_t* s = *state;
  of_tensor_t* logits = make_tensor(s, F64, DIMS(2, 3), VALS(1, 2, 3, 1, 1, 1));
  ASSERT_OK(of_tensor_set_requires_grad(logits, 1));
  of_tensor_t* target = make_tensor(s, I64, DIMS(2), VALS(2, 0));
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_cross_entropy(s, logits, target, NULL, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  const double z = exp(1) + exp(2) + exp(3);
  const double third = 1.0 / 3;
  EXPECT_GRAD(logits, F64, DIMS(2, 3),
              VALS(exp(1) / z / 2, exp(2) / z / 2, (exp(3) / z - 1) / 2, (third - 1) / 2, third / 2, third / 2),
              1e-12);
  of_tensor_release(logits);
  of_tensor_release(target);
  of_tensor_release(loss);
}

/* sum(conv2d(x, w)) with a 2x2 kernel of ones over a 3x3 input: dw[a][b] sums the input under tap
 * (a, b) over the four windows; dx counts the windows covering each input element. */
static void test_conv2d_gradients(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
  of_tensor_t* w = make_tensor(s, F32, DIMS(1, 1, 2, 2), VALS(1, 1, 1, 1));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_conv2d(s, x, w, NULL, NULL, &y));
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(w, F32, DIMS(1, 1, 2, 2), VALS(12, 16, 24, 28), 1e-6);
  EXPECT_GRAD(x, F32, DIMS(1, 1, 3, 3), VALS(1, 2, 1, 2, 4, 2, 1, 2, 1), 1e-6);
  of_tensor_release(x);
  of_tensor_release(w);
  of_tensor_release(y);
  of_tensor_release(loss);
}

static void test_backward_errors(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS0, VALS(2));
  ASSERT_STATUS(of_tensor_backward(NULL, x, NULL, 0), OF_STATUS_INVALID_ARGUMENT, "of_tensor_backward", "session");
  ASSERT_STATUS(of_tensor_backward(s, NULL, NULL, 0), OF_STATUS_INVALID_ARGUMENT, "of_tensor_backward", "tensor");
  /* A tensor that does not require grad. */
  ASSERT_STATUS(of_tensor_backward(s, x, NULL, 0), OF_STATUS_INVALID_ARGUMENT, "of_tensor_backward");
  /* A leaf that requires grad is its own gradient's destination: d x / d x = 1. */
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_tensor_backward(s, x, NULL, 0));
  EXPECT_GRAD(x, F32, DIMS0, VALS(1), 0);
  of_tensor_release(x);
}

/* Overwriting a tensor in place between forward and backward: backward refuses to use the stale saved
 * value (it would give d(w*w)/dw = 10 instead of 2 here), naming the op and the tensor. */
static void test_inplace_write_after_forward(void** state) {
  of_session_t* s = *state;
  of_tensor_t* w = make_tensor(s, F32, DIMS(1), VALS(1));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  of_tensor_t* y = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_mul(s, w, w, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_init_constant(s, w, 5));
  ASSERT_STATUS(of_tensor_backward(s, loss, NULL, 0), OF_STATUS_FAILED_PRECONDITION, "of_tensor_backward", "mul",
                "'a'", "modified in place");
  assert_null(grad_of(w));
  of_tensor_release(y);
  of_tensor_release(loss);

  /* A fresh forward after the write is fine: d(w*w)/dw at 5 is 10. */
  ASSERT_OK(of_mul(s, w, w, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(w, F32, DIMS(1), VALS(10), 0);
  of_tensor_release(y);
  of_tensor_release(loss);

  /* A backward that does not read the written tensor (add's needs only shapes) is unaffected, as in
   * PyTorch; and a write through an optimizer step counts like any other in-place write. */
  ASSERT_OK(of_tensor_set_grad(w, NULL));
  of_tensor_t* b = make_tensor(s, F32, DIMS(1), VALS(3));
  ASSERT_OK(of_add(s, w, b, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_init_constant(s, w, 7));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  EXPECT_GRAD(w, F32, DIMS(1), VALS(1), 0);
  of_tensor_release(y);
  of_tensor_release(loss);

  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &w, 1, NULL, &opt));
  ASSERT_OK(of_mul(s, w, w, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 1)); /* retained: a second backward follows */
  ASSERT_OK(of_optimizer_step(s, opt));             /* writes w, which mul saved as 'a' */
  ASSERT_STATUS(of_tensor_backward(s, loss, NULL, 0), OF_STATUS_FAILED_PRECONDITION, "mul", "'a'");
  /* A view of w shares its version: writing through the view counts too. */
  of_tensor_t* y2 = NULL;
  of_tensor_t* loss2 = NULL;
  of_tensor_t* view = NULL;
  ASSERT_OK(of_mul(s, w, w, &y2));
  ASSERT_OK(of_sum(s, y2, NULL, 0, 0, &loss2));
  ASSERT_OK(of_tensor_detach(w, &view));
  ASSERT_OK(of_init_constant(s, view, 2));
  ASSERT_STATUS(of_tensor_backward(s, loss2, NULL, 0), OF_STATUS_FAILED_PRECONDITION, "mul", "modified in place");
  of_tensor_t* tensors[] = {w, b, y, loss, y2, loss2, view};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
  of_optimizer_destroy(opt);
}

/* Every test starts and ends with grad mode on and autocast off, even when one fails otherwise. */
static int teardown(void** state) {
  of_status_destroy(of_grad_set_enabled(1, NULL));
  of_status_destroy(of_autocast_set(NULL, NULL));
  return of_test_teardown_session(state);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_requires_grad_and_leaves, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_backward_accumulates, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_retain_graph, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_explicit_grad, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_leaf_grad_is_not_the_callers_tensor, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_no_grad_mode, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_detach, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_set_grad, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_linear_gradients, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_autocast, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_cross_entropy_gradient, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_conv2d_gradients, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_backward_errors, of_test_setup_session, teardown),
      cmocka_unit_test_setup_teardown(test_inplace_write_after_forward, of_test_setup_session, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
