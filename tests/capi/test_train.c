/* Training through the C ABI: initialisers, optimizers (against hand-computed steps, with the
 * references they hold), safetensors save/load/load_into and the tensor list; success and error paths. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "capi_test_util.h"

/*===--- helpers ---------------------------------------------------------------------------===*/

static of_tensor_t* make_f64(of_session_t* s, const double* values, const int64_t* dims, size_t ndim) {
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) numel *= dims[i];
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_float64(), dims, ndim, values, (size_t)numel * sizeof(double), NULL, &t));
  return t;
}

static of_tensor_t* vec_f64(of_session_t* s, const double* values, int64_t n) { return make_f64(s, values, &n, 1); }

static of_tensor_t* zeros(of_session_t* s, const of_dtype_t* dtype, const int64_t* dims, size_t ndim) {
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_zeros(s, dtype, dims, ndim, NULL, &t));
  return t;
}

/* The tensor's values as doubles (float32 or float64 tensors); caller frees. */
static double* values_of(const of_tensor_t* t, int64_t* out_n) {
  const of_dtype_t* dtype = NULL;
  ASSERT_OK(of_tensor_dtype(t, &dtype));
  int64_t n = 0;
  ASSERT_OK(of_tensor_numel(t, &n));
  void* raw = of_test_read_all(t, NULL);
  double* out = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  assert_non_null(out);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = dtype == of_dtype_float32() ? (double)((float*)raw)[i] : ((double*)raw)[i];
  }
  free(raw);
  if (out_n != NULL) *out_n = n;
  return out;
}

static void assert_values_near(const of_tensor_t* t, const double* expected, int64_t n, double tol) {
  int64_t got_n = 0;
  double* got = values_of(t, &got_n);
  assert_int_equal(got_n, n);
  for (int64_t i = 0; i < n; ++i) {
    if (fabs(got[i] - expected[i]) > tol) {
      print_error("element %lld: got %.17g, expected %.17g\n", (long long)i, got[i], expected[i]);
      free(got);
      fail();
    }
  }
  free(got);
}

static void set_grad(of_session_t* s, of_tensor_t* param, const double* values, int64_t n) {
  of_tensor_t* g = vec_f64(s, values, n);
  ASSERT_OK(of_tensor_set_grad(param, g));
  of_tensor_release(g);
}

/* A per-process scratch directory for files, and a path inside it. */
static char g_dir[256];
static int setup_dir(void** state) {
  (void)state;
  const char* tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/of_capi_train_%ld", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", (long)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}
static int teardown_dir(void** state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}
static const char* path_in_dir(const char* name, char* buf, size_t size) {
  snprintf(buf, size, "%s/%s", g_dir, name);
  return buf;
}

/*===--- initialisers ----------------------------------------------------------------------===*/

static void test_init_uniform_normal_constant(void** state) {
  (void)state;
  of_session_t* s = of_test_session_seeded(11);
  const int64_t n = 20000;
  of_tensor_t* t = zeros(s, of_dtype_float32(), &n, 1);
  ASSERT_OK(of_init_uniform(s, t, -1.0, 2.0));
  double* v = values_of(t, NULL);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    assert_true(v[i] >= -1.0 && v[i] < 2.0);
    sum += v[i];
  }
  assert_true(fabs(sum / (double)n - 0.5) < 0.05);
  free(v);

  ASSERT_OK(of_init_normal(s, t, 3.0, 0.5));
  v = values_of(t, NULL);
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += v[i];
  mean /= (double)n;
  for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
  var /= (double)n;
  assert_true(fabs(mean - 3.0) < 0.02);
  assert_true(fabs(sqrt(var) - 0.5) < 0.02);
  free(v);

  ASSERT_OK(of_init_constant(s, t, 0.25));
  v = values_of(t, NULL);
  for (int64_t i = 0; i < n; ++i) assert_true(v[i] == 0.25);
  free(v);

  /* float16 too. */
  const int64_t dims[2] = {2, 3};
  of_tensor_t* h = zeros(s, of_dtype_float16(), dims, 2);
  ASSERT_OK(of_init_constant(s, h, -1.5));
  uint16_t bits[6];
  ASSERT_OK(of_tensor_copy_to_host(h, bits, sizeof bits));
  for (int i = 0; i < 6; ++i) assert_true(of_test_f16_to_float(bits[i]) == -1.5f);
  of_tensor_release(h);
  of_tensor_release(t);
  of_session_destroy(s);
}

static void test_init_reproducible_across_thread_counts(void** state) {
  (void)state;
  of_tensor_t* results[3] = {NULL, NULL, NULL};
  const int32_t threads[3] = {1, 2, 4};
  for (int k = 0; k < 3; ++k) {
    of_session_options_t options;
    of_session_options_init(&options);
    options.seed = 5;
    options.num_threads = threads[k];
    of_session_t* s = NULL;
    ASSERT_OK(of_session_create(&options, &s));
    const int64_t dims[2] = {300, 400};
    results[k] = zeros(s, of_dtype_float32(), dims, 2);
    ASSERT_OK(of_init_kaiming_normal(s, results[k], NULL));
    of_session_destroy(s);
  }
  of_test_assert_same_bytes(results[0], results[1]);
  of_test_assert_same_bytes(results[0], results[2]);
  for (int k = 0; k < 3; ++k) of_tensor_release(results[k]);
}

static double max_abs(const of_tensor_t* t) {
  int64_t n = 0;
  double* v = values_of(t, &n);
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = fabs(v[i]) > m ? fabs(v[i]) : m;
  free(v);
  return m;
}

static void test_init_kaiming_and_xavier(void** state) {
  (void)state;
  of_kaiming_options_t o;
  memset(&o, 0x7f, sizeof o);
  of_kaiming_options_init(&o);
  assert_int_equal(o.struct_size, sizeof(of_kaiming_options_t));
  assert_true(o.a == 0.0);
  assert_int_equal(o.mode, OF_FAN_MODE_FAN_IN);
  assert_int_equal(o.nonlinearity, OF_NONLINEARITY_LEAKY_RELU);
  of_kaiming_options_init(NULL);

  of_session_t* s = of_test_session_seeded(3);
  const int64_t dims[4] = {64, 8, 3, 3}; /* fan_in 72, fan_out 576 */
  of_tensor_t* w = zeros(s, of_dtype_float64(), dims, 4);
  ASSERT_OK(of_init_kaiming_uniform(s, w, NULL));
  double bound = sqrt(2.0) * sqrt(3.0 / 72.0);
  double m = max_abs(w);
  assert_true(m <= bound && m > 0.99 * bound);

  o.mode = OF_FAN_MODE_FAN_OUT;
  o.nonlinearity = OF_NONLINEARITY_TANH;
  ASSERT_OK(of_init_kaiming_uniform(s, w, &o));
  bound = 5.0 / 3.0 * sqrt(3.0 / 576.0);
  m = max_abs(w);
  assert_true(m <= bound && m > 0.99 * bound);

  ASSERT_OK(of_init_kaiming_normal(s, w, &o));
  ASSERT_OK(of_init_xavier_uniform(s, w, 0.5));
  bound = 0.5 * sqrt(6.0 / (72.0 + 576.0));
  m = max_abs(w);
  assert_true(m <= bound && m > 0.99 * bound);
  ASSERT_OK(of_init_xavier_normal(s, w, 1.0));
  of_tensor_release(w);

  /* NULL options are the defaults: the same draws as default-initialised options. */
  of_session_t* a = of_test_session_seeded(8);
  of_session_t* b = of_test_session_seeded(8);
  of_tensor_t* wa = zeros(a, of_dtype_float32(), dims, 4);
  of_tensor_t* wb = zeros(b, of_dtype_float32(), dims, 4);
  of_kaiming_options_t defaults;
  of_kaiming_options_init(&defaults);
  ASSERT_OK(of_init_kaiming_uniform(a, wa, NULL));
  ASSERT_OK(of_init_kaiming_uniform(b, wb, &defaults));
  of_test_assert_same_bytes(wa, wb);
  of_tensor_release(wa);
  of_tensor_release(wb);
  of_session_destroy(a);
  of_session_destroy(b);
  of_session_destroy(s);
}

static void test_init_errors(void** state) {
  (void)state;
  of_session_t* s = of_test_session_seeded(21);
  of_session_t* fresh = of_test_session_seeded(21);
  const int64_t dims[2] = {4, 3};
  of_tensor_t* w = zeros(s, of_dtype_float32(), dims, 2);
  of_tensor_t* ints = zeros(s, of_dtype_int32(), dims, 2);
  const int64_t n5 = 5;
  of_tensor_t* vec = zeros(s, of_dtype_float32(), &n5, 1);
  of_kaiming_options_t o;

  ASSERT_STATUS(of_init_uniform(NULL, w, 0, 1), OF_STATUS_INVALID_ARGUMENT, "of_init_uniform", "session");
  ASSERT_STATUS(of_init_uniform(s, NULL, 0, 1), OF_STATUS_INVALID_ARGUMENT, "of_init_uniform", "tensor");
  ASSERT_STATUS(of_init_uniform(s, ints, 0, 1), OF_STATUS_INVALID_ARGUMENT, "floating", "int32");
  ASSERT_STATUS(of_init_uniform(s, w, 2, 1), OF_STATUS_INVALID_ARGUMENT, "a", "b");
  ASSERT_STATUS(of_init_uniform(s, w, NAN, 1), OF_STATUS_INVALID_ARGUMENT, "a", "finite");
  ASSERT_STATUS(of_init_normal(s, w, 0, -1), OF_STATUS_INVALID_ARGUMENT, "of_init_normal", "std");
  ASSERT_STATUS(of_init_normal(NULL, w, 0, 1), OF_STATUS_INVALID_ARGUMENT, "session");
  ASSERT_STATUS(of_init_constant(s, ints, 1), OF_STATUS_INVALID_ARGUMENT, "of_init_constant", "int32");
  ASSERT_STATUS(of_init_constant(s, w, 1e300), OF_STATUS_INVALID_ARGUMENT, "value", "float32");
  ASSERT_STATUS(of_init_constant(s, NULL, 0), OF_STATUS_INVALID_ARGUMENT, "tensor");
  ASSERT_STATUS(of_init_kaiming_uniform(s, vec, NULL), OF_STATUS_INVALID_ARGUMENT, "of_init_kaiming_uniform",
                "2 dims", "(5,)");
  of_kaiming_options_init(&o);
  o.mode = 7;
  ASSERT_STATUS(of_init_kaiming_uniform(s, w, &o), OF_STATUS_INVALID_ARGUMENT, "mode", "7");
  of_kaiming_options_init(&o);
  o.nonlinearity = -1;
  ASSERT_STATUS(of_init_kaiming_normal(s, w, &o), OF_STATUS_INVALID_ARGUMENT, "nonlinearity", "-1");
  of_kaiming_options_init(&o);
  o.struct_size = 0;
  ASSERT_STATUS(of_init_kaiming_normal(s, w, &o), OF_STATUS_INVALID_ARGUMENT, "struct_size");
  of_kaiming_options_init(&o);
  o.a = INFINITY;
  ASSERT_STATUS(of_init_kaiming_normal(s, w, &o), OF_STATUS_INVALID_ARGUMENT, "a", "finite");
  ASSERT_STATUS(of_init_kaiming_normal(s, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "tensor");
  ASSERT_STATUS(of_init_xavier_uniform(s, vec, 1), OF_STATUS_INVALID_ARGUMENT, "of_init_xavier_uniform", "2 dims");
  ASSERT_STATUS(of_init_xavier_normal(s, w, -2), OF_STATUS_INVALID_ARGUMENT, "gain", "-2");
  ASSERT_STATUS(of_init_xavier_normal(NULL, w, 1), OF_STATUS_INVALID_ARGUMENT, "session");
  /* Parameters whose results the dtype cannot hold (they used to be written as inf). */
  of_tensor_t* half = zeros(s, of_dtype_float16(), dims, 2);
  of_tensor_t* f64 = zeros(s, of_dtype_float64(), dims, 2);
  ASSERT_STATUS(of_init_uniform(s, half, 0, 1e6), OF_STATUS_INVALID_ARGUMENT, "of_init_uniform", "b", "float16");
  ASSERT_STATUS(of_init_normal(s, w, 0, 1e300), OF_STATUS_INVALID_ARGUMENT, "of_init_normal", "std", "float32");
  ASSERT_STATUS(of_init_normal(s, w, 3e38, 1e38), OF_STATUS_INVALID_ARGUMENT, "mean", "float32");
  ASSERT_STATUS(of_init_uniform(s, w, -1.7e308, 1.7e308), OF_STATUS_INVALID_ARGUMENT, "a", "float32");
  ASSERT_STATUS(of_init_uniform(s, f64, -1.7e308, 1.7e308), OF_STATUS_INVALID_ARGUMENT, "b - a", "overflows");
  ASSERT_STATUS(of_init_xavier_normal(s, half, 1e300), OF_STATUS_INVALID_ARGUMENT, "of_init_xavier_normal", "float16");
  ASSERT_STATUS(of_init_xavier_uniform(s, half, 1e6), OF_STATUS_INVALID_ARGUMENT, "float16");
  /* An expanded view has elements that share memory: writing it would keep one value of several. */
  of_tensor_t* row = zeros(s, of_dtype_float32(), &n5, 1);
  of_tensor_t* expanded = NULL;
  const int64_t edims[2] = {3, 5};
  ASSERT_OK(of_expand(s, row, edims, 2, &expanded));
  ASSERT_STATUS(of_init_uniform(s, expanded, 0, 1), OF_STATUS_INVALID_ARGUMENT, "of_init_uniform", "share memory");
  ASSERT_STATUS(of_init_constant(s, expanded, 1), OF_STATUS_INVALID_ARGUMENT, "share memory");
  of_tensor_release(expanded);
  of_tensor_release(row);

  /* Nothing was written and the generator did not move. */
  double* v = values_of(w, NULL);
  for (int i = 0; i < 12; ++i) assert_true(v[i] == 0.0);
  free(v);
  of_test_assert_same_next_rand(s, fresh, 16);

  /* In range they work, the float16 normal included (bounded by its largest draw), and write finite
   * values. */
  ASSERT_OK(of_init_uniform(s, half, -65504, 65504));
  ASSERT_OK(of_init_normal(s, half, 0, 10000));
  ASSERT_OK(of_init_uniform(s, f64, -8e307, 8e307));
  double* hv = values_of(f64, NULL);
  for (int i = 0; i < 12; ++i) assert_true(isfinite(hv[i]) && fabs(hv[i]) <= 8e307);
  free(hv);
  of_tensor_release(half);
  of_tensor_release(f64);
  of_tensor_release(vec);
  of_tensor_release(ints);
  of_tensor_release(w);
  of_session_destroy(fresh);
  of_session_destroy(s);
}

/*===--- optimizers ------------------------------------------------------------------------===*/

static void test_optimizer_options_init(void** state) {
  (void)state;
  of_sgd_options_t sgd;
  memset(&sgd, 0x7f, sizeof sgd);
  of_sgd_options_init(&sgd);
  assert_int_equal(sgd.struct_size, sizeof(of_sgd_options_t));
  assert_true(sgd.lr == 0.001 && sgd.momentum == 0.0 && sgd.dampening == 0.0 && sgd.weight_decay == 0.0);
  assert_int_equal(sgd.nesterov, 0);
  of_adam_options_t adam;
  memset(&adam, 0x7f, sizeof adam);
  of_adam_options_init(&adam);
  assert_int_equal(adam.struct_size, sizeof(of_adam_options_t));
  assert_true(adam.lr == 0.001 && adam.beta1 == 0.9 && adam.beta2 == 0.999 && adam.eps == 1e-8);
  assert_true(adam.weight_decay == 0.0);
  assert_int_equal(adam.decoupled_weight_decay, 0);
  of_sgd_options_init(NULL);
  of_adam_options_init(NULL);
}

static void test_sgd_steps_by_hand(void** state) {
  of_session_t* s = *state;
  const double p0[2] = {1.0, -2.0};
  of_tensor_t* p = vec_f64(s, p0, 2);
  ASSERT_OK(of_tensor_set_requires_grad(p, 1));
  of_sgd_options_t o;
  of_sgd_options_init(&o);
  o.lr = 0.1;
  o.momentum = 0.9;
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &p, 1, &o, &opt));
  assert_non_null(opt);

  /* buf = g, then 0.9 buf + g; p -= 0.1 buf (see tests/train/optimizer_test.cpp). */
  const double g1[2] = {0.5, -1.0}, g2[2] = {0.25, 0.5};
  const double want1[2] = {0.95, -1.9}, want2[2] = {0.88, -1.86};
  set_grad(s, p, g1, 2);
  ASSERT_OK(of_optimizer_step(s, opt));
  assert_values_near(p, want1, 2, 1e-12);
  set_grad(s, p, g2, 2);
  ASSERT_OK(of_optimizer_step(s, opt));
  assert_values_near(p, want2, 2, 1e-12);

  /* zero_grad clears the grad; a step without grads changes nothing. */
  ASSERT_OK(of_optimizer_zero_grad(opt));
  of_tensor_t* g = SENTINEL_PTR(of_tensor_t*);
  ASSERT_OK(of_tensor_grad(p, &g));
  assert_null(g);
  ASSERT_OK(of_optimizer_step(s, opt));
  assert_values_near(p, want2, 2, 1e-12);

  double lr = 0;
  ASSERT_OK(of_optimizer_lr(opt, &lr));
  assert_true(lr == 0.1);
  ASSERT_OK(of_optimizer_set_lr(opt, 0.0));
  ASSERT_OK(of_optimizer_lr(opt, &lr));
  assert_true(lr == 0.0);
  set_grad(s, p, g1, 2);
  ASSERT_OK(of_optimizer_step(s, opt)); /* lr 0: the buffer moves, p does not */
  assert_values_near(p, want2, 2, 1e-12);

  of_optimizer_destroy(opt);
  of_tensor_release(p);
}

static void test_adam_and_adamw_by_hand(void** state) {
  of_session_t* s = *state;
  /* p = 2, g = 0.5, lr 0.1, eps 0, weight_decay 0.5: Adam 1.9, AdamW 1.8. */
  for (int decoupled = 0; decoupled <= 1; ++decoupled) {
    const double two = 2.0, half = 0.5;
    of_tensor_t* p = vec_f64(s, &two, 1);
    of_adam_options_t o;
    of_adam_options_init(&o);
    o.lr = 0.1;
    o.eps = 0.0;
    o.weight_decay = 0.5;
    o.decoupled_weight_decay = decoupled;
    of_optimizer_t* opt = NULL;
    ASSERT_OK(of_optimizer_adam_create(s, &p, 1, &o, &opt));
    set_grad(s, p, &half, 1);
    ASSERT_OK(of_optimizer_step(s, opt));
    const double want = decoupled ? 1.8 : 1.9;
    assert_values_near(p, &want, 1, 1e-12);
    of_optimizer_destroy(opt);
    of_tensor_release(p);
  }
  /* NULL options: PyTorch's defaults (lr 0.001); the first step moves p by lr * sign(g). */
  const double zero = 0.0, minus = -3.0;
  of_tensor_t* p = vec_f64(s, &zero, 1);
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_adam_create(s, &p, 1, NULL, &opt));
  set_grad(s, p, &minus, 1);
  ASSERT_OK(of_optimizer_step(s, opt));
  const double want = 0.001;
  assert_values_near(p, &want, 1, 1e-9);
  of_optimizer_destroy(opt);
  of_tensor_release(p);
}

static int g_deleted;
static void count_delete(void* data, void* user_data) {
  (void)user_data;
  free(data);
  ++g_deleted;
}

static void test_optimizer_holds_its_parameters(void** state) {
  of_session_t* s = *state;
  double* data = malloc(2 * sizeof(double));
  assert_non_null(data);
  data[0] = 1.0;
  data[1] = 2.0;
  const int64_t n = 2;
  of_tensor_t* p = NULL;
  g_deleted = 0;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_float64(), &n, 1, data, 2 * sizeof(double), count_delete, NULL, &p));
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &p, 1, NULL, &opt));
  of_tensor_release(p); /* the optimizer keeps it alive */
  assert_int_equal(g_deleted, 0);
  ASSERT_OK(of_optimizer_step(s, opt));
  ASSERT_OK(of_optimizer_zero_grad(opt));
  of_optimizer_destroy(opt);
  assert_int_equal(g_deleted, 1);
  of_optimizer_destroy(NULL);
}

static void test_optimizer_errors(void** state) {
  of_session_t* s = *state;
  const double v[2] = {1.0, 2.0};
  of_tensor_t* p = vec_f64(s, v, 2);
  const int64_t n2 = 2;
  of_tensor_t* ints = zeros(s, of_dtype_int64(), &n2, 1);
  of_tensor_t* halfs = zeros(s, of_dtype_float16(), &n2, 1);
  of_tensor_t* with_null[2] = {p, NULL};
  of_tensor_t* twice[2] = {p, p};
  of_optimizer_t* opt = SENTINEL_PTR(of_optimizer_t*);
  of_sgd_options_t o;
  of_adam_options_t a;

  ASSERT_STATUS(of_optimizer_sgd_create(NULL, &p, 1, NULL, &opt), OF_STATUS_INVALID_ARGUMENT,
                "of_optimizer_sgd_create", "session");
  ASSERT_STATUS(of_optimizer_sgd_create(s, NULL, 1, NULL, &opt), OF_STATUS_INVALID_ARGUMENT, "params");
  ASSERT_STATUS(of_optimizer_sgd_create(s, with_null, 2, NULL, &opt), OF_STATUS_INVALID_ARGUMENT, "params[1]");
  ASSERT_STATUS(of_optimizer_sgd_create(s, NULL, 0, NULL, &opt), OF_STATUS_INVALID_ARGUMENT, "empty");
  ASSERT_STATUS(of_optimizer_sgd_create(s, twice, 2, NULL, &opt), OF_STATUS_INVALID_ARGUMENT, "parameter 1",
                "more than once");
  ASSERT_STATUS(of_optimizer_sgd_create(s, &ints, 1, NULL, &opt), OF_STATUS_INVALID_ARGUMENT, "parameter 0",
                "int64");
  of_optimizer_t* half_opt = NULL;
  ASSERT_OK(of_optimizer_adam_create(s, &halfs, 1, NULL, &half_opt)); /* float16 parameters are fine */
  of_optimizer_destroy(half_opt);
  ASSERT_STATUS(of_optimizer_sgd_create(s, &p, 1, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_optimizer");
  of_sgd_options_init(&o);
  o.lr = -1;
  ASSERT_STATUS(of_optimizer_sgd_create(s, &p, 1, &o, &opt), OF_STATUS_INVALID_ARGUMENT, "lr", "-1");
  of_sgd_options_init(&o);
  o.nesterov = 2;
  ASSERT_STATUS(of_optimizer_sgd_create(s, &p, 1, &o, &opt), OF_STATUS_INVALID_ARGUMENT, "options->nesterov");
  of_sgd_options_init(&o);
  o.nesterov = 1;
  ASSERT_STATUS(of_optimizer_sgd_create(s, &p, 1, &o, &opt), OF_STATUS_INVALID_ARGUMENT, "nesterov", "momentum");
  of_sgd_options_init(&o);
  o.struct_size = 3;
  ASSERT_STATUS(of_optimizer_sgd_create(s, &p, 1, &o, &opt), OF_STATUS_INVALID_ARGUMENT, "struct_size");
  of_adam_options_init(&a);
  a.beta1 = 1.0;
  ASSERT_STATUS(of_optimizer_adam_create(s, &p, 1, &a, &opt), OF_STATUS_INVALID_ARGUMENT, "beta1");
  of_adam_options_init(&a);
  a.eps = -1e-8;
  ASSERT_STATUS(of_optimizer_adam_create(s, &p, 1, &a, &opt), OF_STATUS_INVALID_ARGUMENT, "eps");
  of_adam_options_init(&a);
  a.decoupled_weight_decay = 5;
  ASSERT_STATUS(of_optimizer_adam_create(s, &p, 1, &a, &opt), OF_STATUS_INVALID_ARGUMENT,
                "options->decoupled_weight_decay");
  assert_ptr_equal(opt, SENTINEL_PTR(of_optimizer_t*)); /* failed calls left it untouched */

  ASSERT_OK(of_optimizer_sgd_create(s, &p, 1, NULL, &opt));
  ASSERT_STATUS(of_optimizer_step(NULL, opt), OF_STATUS_INVALID_ARGUMENT, "of_optimizer_step", "session");
  ASSERT_STATUS(of_optimizer_step(s, NULL), OF_STATUS_INVALID_ARGUMENT, "optimizer");
  ASSERT_STATUS(of_optimizer_zero_grad(NULL), OF_STATUS_INVALID_ARGUMENT, "of_optimizer_zero_grad", "optimizer");
  ASSERT_STATUS(of_optimizer_set_lr(NULL, 0.1), OF_STATUS_INVALID_ARGUMENT, "optimizer");
  ASSERT_STATUS(of_optimizer_set_lr(opt, -0.5), OF_STATUS_INVALID_ARGUMENT, "of_optimizer_set_lr", "lr");
  ASSERT_STATUS(of_optimizer_set_lr(opt, NAN), OF_STATUS_INVALID_ARGUMENT, "lr");
  double lr = -7;
  ASSERT_STATUS(of_optimizer_lr(NULL, &lr), OF_STATUS_INVALID_ARGUMENT, "optimizer");
  ASSERT_STATUS(of_optimizer_lr(opt, NULL), OF_STATUS_INVALID_ARGUMENT, "out_lr");
  assert_true(lr == -7);
  ASSERT_OK(of_optimizer_lr(opt, &lr));
  assert_true(lr == 0.001);
  of_optimizer_destroy(opt);

  of_tensor_release(halfs);
  of_tensor_release(ints);
  of_tensor_release(p);
}

/* Fit w in y = x * w by minimising sum((x * w - y)^2) with ops, autograd and SGD. */
static void test_training_loop_through_autograd(void** state) {
  of_session_t* s = *state;
  const double xs[3] = {1.0, 2.0, -1.0}, ys[3] = {2.0, -1.0, 0.5}, w0[3] = {0, 0, 0};
  of_tensor_t* x = vec_f64(s, xs, 3);
  of_tensor_t* y = vec_f64(s, ys, 3);
  of_tensor_t* w = vec_f64(s, w0, 3);
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  of_sgd_options_t o;
  of_sgd_options_init(&o);
  o.lr = 0.05;
  o.momentum = 0.5;
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &w, 1, &o, &opt));
  double last = 0;
  for (int step = 0; step < 200; ++step) {
    of_tensor_t *xw = NULL, *r = NULL, *r2 = NULL, *loss = NULL;
    ASSERT_OK(of_optimizer_zero_grad(opt));
    ASSERT_OK(of_mul(s, x, w, &xw));
    ASSERT_OK(of_sub(s, xw, y, &r));
    ASSERT_OK(of_mul(s, r, r, &r2));
    ASSERT_OK(of_sum(s, r2, NULL, 0, 0, &loss));
    ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
    ASSERT_OK(of_optimizer_step(s, opt));
    double* l = values_of(loss, NULL);
    last = l[0];
    if (step == 0) assert_true(fabs(l[0] - 5.25) < 1e-12);
    free(l);
    of_tensor_release(loss);
    of_tensor_release(r2);
    of_tensor_release(r);
    of_tensor_release(xw);
  }
  assert_true(last < 1e-8);
  const double want[3] = {2.0, -0.5, -0.5};
  assert_values_near(w, want, 3, 1e-4);
  of_optimizer_destroy(opt);
  of_tensor_release(w);
  of_tensor_release(y);
  of_tensor_release(x);
}

/* Dynamic loss scaling: a step on finite gradients equals the unscaled step (scale 2^10: exact), a step
 * whose gradients hold an inf is skipped and halves the scale; its errors. */
static void test_loss_scaling(void** state) {
  of_session_t* s = *state;
  of_loss_scale_options_t d;
  memset(&d, 0x7f, sizeof d);
  of_loss_scale_options_init(&d);
  assert_int_equal(d.struct_size, sizeof(of_loss_scale_options_t));
  assert_true(d.init_scale == 65536.0 && d.growth_factor == 2.0 && d.backoff_factor == 0.5);
  assert_int_equal(d.growth_interval, 2000);
  of_loss_scale_options_init(NULL);

  const double p0[2] = {1.0, -2.0};
  of_tensor_t* p = vec_f64(s, p0, 2);
  ASSERT_OK(of_tensor_set_requires_grad(p, 1));
  of_sgd_options_t o;
  of_sgd_options_init(&o);
  o.lr = 0.1;
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &p, 1, &o, &opt));
  double scale = 0;
  int64_t skipped = -1;
  ASSERT_OK(of_optimizer_loss_scale(opt, &scale, &skipped));
  assert_true(scale == 1.0); /* off */
  assert_int_equal(skipped, 0);
  of_tensor_t* bad = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_optimizer_scale_loss(s, opt, p, &bad), OF_STATUS_FAILED_PRECONDITION, "loss scaling is off");
  of_loss_scale_options_t lo;
  of_loss_scale_options_init(&lo);
  lo.backoff_factor = 2.0;
  ASSERT_STATUS(of_optimizer_enable_loss_scaling(s, opt, &lo), OF_STATUS_INVALID_ARGUMENT, "backoff_factor");
  lo.backoff_factor = 0.5;
  lo.init_scale = 1024.0;
  lo.growth_interval = 2;
  ASSERT_OK(of_optimizer_enable_loss_scaling(s, opt, &lo));
  ASSERT_STATUS(of_optimizer_enable_loss_scaling(s, opt, NULL), OF_STATUS_FAILED_PRECONDITION, "already on");
  ASSERT_STATUS(of_optimizer_scale_loss(s, opt, NULL, &bad), OF_STATUS_INVALID_ARGUMENT, "loss");
  ASSERT_STATUS(of_optimizer_scale_loss(s, opt, p, NULL), OF_STATUS_INVALID_ARGUMENT, "out_scaled");

  /* loss = sum(x * p), so grad = x: step 1 finite (p -= 0.1 x), step 2 with an inf (skipped). */
  const double xs[2][2] = {{0.5, 1.0}, {INFINITY, 1.0}};
  const double want_p[2][2] = {{0.95, -2.1}, {0.95, -2.1}};
  const double want_scale[2] = {1024.0, 512.0};
  for (int step = 0; step < 2; ++step) {
    of_tensor_t *x = vec_f64(s, xs[step], 2), *xp = NULL, *loss = NULL, *scaled = NULL;
    ASSERT_OK(of_optimizer_zero_grad(opt));
    ASSERT_OK(of_mul(s, x, p, &xp));
    ASSERT_OK(of_sum(s, xp, NULL, 0, 0, &loss));
    ASSERT_OK(of_optimizer_scale_loss(s, opt, loss, &scaled));
    ASSERT_OK(of_tensor_backward(s, scaled, NULL, 0));
    ASSERT_OK(of_optimizer_step(s, opt));
    assert_values_near(p, want_p[step], 2, 0.0);
    ASSERT_OK(of_optimizer_loss_scale(opt, &scale, NULL));
    assert_true(scale == want_scale[step]);
    ASSERT_OK(of_optimizer_loss_scale(opt, NULL, &skipped));
    assert_int_equal(skipped, step);
    of_tensor_release(scaled);
    of_tensor_release(loss);
    of_tensor_release(xp);
    of_tensor_release(x);
  }
  ASSERT_STATUS(of_optimizer_loss_scale(NULL, &scale, NULL), OF_STATUS_INVALID_ARGUMENT, "optimizer");
  of_optimizer_destroy(opt);

  /* After a step it is too late to turn it on. */
  ASSERT_OK(of_optimizer_sgd_create(s, &p, 1, &o, &opt));
  const double g[2] = {1.0, 1.0};
  set_grad(s, p, g, 2);
  ASSERT_OK(of_optimizer_step(s, opt));
  ASSERT_STATUS(of_optimizer_enable_loss_scaling(s, opt, NULL), OF_STATUS_FAILED_PRECONDITION, "first step");
  of_optimizer_destroy(opt);
  of_tensor_release(p);
}

/*===--- safetensors -----------------------------------------------------------------------===*/

static void test_safetensors_round_trip(void** state) {
  of_session_t* s = *state;
  char path[512];
  path_in_dir("model.safetensors", path, sizeof path);
  const double wv[6] = {1, 2, 3, 4, 5, 6};
  const int64_t wdims[2] = {2, 3};
  of_tensor_t* w = make_f64(s, wv, wdims, 2);
  const int64_t ids[4] = {7, -8, 9, 1LL << 40};
  const int64_t n4 = 4;
  of_tensor_t* i64 = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_int64(), &n4, 1, ids, sizeof ids, NULL, &i64));
  const uint8_t flags[3] = {1, 0, 1};
  const int64_t n3 = 3;
  of_tensor_t* b = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_bool(), &n3, 1, flags, sizeof flags, NULL, &b));
  const char* names[3] = {"layer.weight", "ids", "mask"};
  const of_tensor_t* tensors[3] = {w, i64, b};
  ASSERT_OK(of_safetensors_save(path, names, tensors, 3));

  of_tensor_list_t* list = SENTINEL_PTR(of_tensor_list_t*);
  ASSERT_OK(of_safetensors_load(s, path, &list));
  assert_int_equal(of_tensor_list_count(list), 3);
  for (size_t i = 0; i < 3; ++i) {
    const char* name = NULL;
    ASSERT_OK(of_tensor_list_name(list, i, &name));
    assert_string_equal(name, names[i]);
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_list_get(list, i, &t));
    const of_dtype_t *d1 = NULL, *d2 = NULL;
    ASSERT_OK(of_tensor_dtype(t, &d1));
    ASSERT_OK(of_tensor_dtype(tensors[i], &d2));
    assert_ptr_equal(d1, d2);
    of_test_assert_same_bytes(t, tensors[i]);
    of_tensor_release(t);
  }
  /* A tensor taken from the list outlives it. */
  of_tensor_t* kept = NULL;
  ASSERT_OK(of_tensor_list_get(list, 0, &kept));
  of_tensor_list_destroy(list);
  of_test_assert_same_bytes(kept, w);
  of_tensor_release(kept);

  /* load_into existing tensors, strict and not. */
  of_tensor_t* w2 = zeros(s, of_dtype_float64(), wdims, 2);
  of_tensor_t* i2 = zeros(s, of_dtype_int64(), &n4, 1);
  of_tensor_t* b2 = zeros(s, of_dtype_bool(), &n3, 1);
  of_tensor_t* targets[3] = {b2, w2, i2};
  const char* target_names[3] = {"mask", "layer.weight", "ids"};
  ASSERT_OK(of_safetensors_load_into(path, target_names, targets, 3, 1));
  of_test_assert_same_bytes(w2, w);
  of_test_assert_same_bytes(i2, i64);
  of_test_assert_same_bytes(b2, b);
  of_tensor_t* w3 = zeros(s, of_dtype_float64(), wdims, 2);
  const char* one_name[1] = {"layer.weight"};
  ASSERT_OK(of_safetensors_load_into(path, one_name, &w3, 1, 0));
  of_test_assert_same_bytes(w3, w);
  ASSERT_OK(of_safetensors_load_into(path, NULL, NULL, 0, 0)); /* nothing to do */

  of_tensor_release(w3);
  of_tensor_release(b2);
  of_tensor_release(i2);
  of_tensor_release(w2);
  of_tensor_release(b);
  of_tensor_release(i64);
  of_tensor_release(w);
}

static void write_file(const char* path, const void* bytes, size_t n) {
  FILE* f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void test_safetensors_errors(void** state) {
  of_session_t* s = *state;
  char path[512], missing[512], truncated[512];
  path_in_dir("e.safetensors", path, sizeof path);
  path_in_dir("missing.safetensors", missing, sizeof missing);
  path_in_dir("truncated.safetensors", truncated, sizeof truncated);
  const double wv[2] = {1, 2};
  of_tensor_t* w = vec_f64(s, wv, 2);
  const char* names[1] = {"w"};
  const of_tensor_t* tensors[1] = {w};
  ASSERT_OK(of_safetensors_save(path, names, tensors, 1));
  const char* null_name[1] = {NULL};
  const of_tensor_t* null_tensor[1] = {NULL};
  const char* dup_names[2] = {"w", "w"};
  const of_tensor_t* dup_tensors[2] = {w, w};

  ASSERT_STATUS(of_safetensors_save(NULL, names, tensors, 1), OF_STATUS_INVALID_ARGUMENT, "of_safetensors_save",
                "path");
  ASSERT_STATUS(of_safetensors_save(path, NULL, tensors, 1), OF_STATUS_INVALID_ARGUMENT, "names");
  ASSERT_STATUS(of_safetensors_save(path, names, NULL, 1), OF_STATUS_INVALID_ARGUMENT, "tensors");
  ASSERT_STATUS(of_safetensors_save(path, null_name, tensors, 1), OF_STATUS_INVALID_ARGUMENT, "names[0]");
  ASSERT_STATUS(of_safetensors_save(path, names, null_tensor, 1), OF_STATUS_INVALID_ARGUMENT, "tensors[0]");
  ASSERT_STATUS(of_safetensors_save(path, dup_names, dup_tensors, 2), OF_STATUS_INVALID_ARGUMENT, "'w'",
                "more than one");

  of_tensor_list_t* list = SENTINEL_PTR(of_tensor_list_t*);
  ASSERT_STATUS(of_safetensors_load(NULL, path, &list), OF_STATUS_INVALID_ARGUMENT, "of_safetensors_load",
                "session");
  ASSERT_STATUS(of_safetensors_load(s, NULL, &list), OF_STATUS_INVALID_ARGUMENT, "path");
  ASSERT_STATUS(of_safetensors_load(s, path, NULL), OF_STATUS_INVALID_ARGUMENT, "out_list");
  ASSERT_STATUS(of_safetensors_load(s, missing, &list), OF_STATUS_NOT_FOUND, missing);
  /* A header size of 64 bytes in a 12-byte file. */
  const unsigned char short_file[12] = {64, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
  write_file(truncated, short_file, sizeof short_file);
  ASSERT_STATUS(of_safetensors_load(s, truncated, &list), OF_STATUS_DATA_LOSS, truncated, "truncated");
  assert_ptr_equal(list, SENTINEL_PTR(of_tensor_list_t*));

  /* load_into */
  of_tensor_t* f32 = NULL;
  const int64_t n2 = 2;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float32(), &n2, 1, NULL, &f32));
  of_tensor_t* w2 = zeros(s, of_dtype_float64(), &n2, 1);
  const char* other[1] = {"v"};
  ASSERT_STATUS(of_safetensors_load_into(path, names, &f32, 1, 1), OF_STATUS_INVALID_ARGUMENT,
                "of_safetensors_load_into", "'w'", "float64", "float32");
  ASSERT_STATUS(of_safetensors_load_into(path, other, &w2, 1, 1), OF_STATUS_NOT_FOUND, "'v'");
  ASSERT_STATUS(of_safetensors_load_into(path, names, &w2, 1, 2), OF_STATUS_INVALID_ARGUMENT, "strict");
  ASSERT_STATUS(of_safetensors_load_into(NULL, names, &w2, 1, 1), OF_STATUS_INVALID_ARGUMENT, "path");
  ASSERT_STATUS(of_safetensors_load_into(path, NULL, &w2, 1, 1), OF_STATUS_INVALID_ARGUMENT, "names");
  ASSERT_STATUS(of_safetensors_load_into(path, names, NULL, 1, 1), OF_STATUS_INVALID_ARGUMENT, "tensors");
  ASSERT_STATUS(of_safetensors_load_into(missing, names, &w2, 1, 1), OF_STATUS_NOT_FOUND, missing);
  ASSERT_STATUS(of_safetensors_load_into(truncated, names, &w2, 1, 0), OF_STATUS_DATA_LOSS, "truncated");
  const double zeros2[2] = {0, 0};
  assert_values_near(w2, zeros2, 2, 0); /* untouched by the failed calls */

  /* Destinations that alias themselves (an expanded view: the file's two rows would land on one) or
   * each other (two views of one tensor's memory) are refused before anything is read. */
  {
    const double m[4] = {1, 2, 3, 4};
    const int64_t mdims[2] = {2, 2};
    of_tensor_t* mat = make_f64(s, m, mdims, 2);
    char mpath[512];
    path_in_dir("m.safetensors", mpath, sizeof mpath);
    const char* mname[1] = {"m"};
    ASSERT_OK(of_safetensors_save(mpath, mname, (const of_tensor_t* const[]){mat}, 1));
    of_tensor_t* row = zeros(s, of_dtype_float64(), &n2, 1);
    of_tensor_t* expanded = NULL;
    ASSERT_OK(of_expand(s, row, mdims, 2, &expanded));
    ASSERT_STATUS(of_safetensors_load_into(mpath, mname, &expanded, 1, 1), OF_STATUS_INVALID_ARGUMENT,
                  "of_safetensors_load_into", "'m'", "share memory");
    assert_values_near(row, zeros2, 2, 0);
    of_tensor_t* target = zeros(s, of_dtype_float64(), mdims, 2);
    of_tensor_t* alias = NULL;
    ASSERT_OK(of_transpose(s, target, 0, 1, &alias));
    const char* both[2] = {"m", "n"};
    ASSERT_OK(of_safetensors_save(mpath, both, (const of_tensor_t* const[]){mat, mat}, 2));
    ASSERT_STATUS(of_safetensors_load_into(mpath, both, (of_tensor_t* const[]){target, alias}, 2, 1),
                  OF_STATUS_INVALID_ARGUMENT, "'m'", "'n'", "overlap");
    /* A strided but non-overlapping destination is fine: the transposed view receives the file's
     * rows as its rows. */
    ASSERT_OK(of_safetensors_load_into(mpath, mname, &alias, 1, 0));
    const double transposed[4] = {1, 3, 2, 4};
    assert_values_near(target, transposed, 4, 0);
    of_tensor_release(alias);
    of_tensor_release(target);
    of_tensor_release(expanded);
    of_tensor_release(row);
    of_tensor_release(mat);
  }

  /* The list accessors. */
  ASSERT_OK(of_safetensors_load(s, path, &list));
  const char* name = SENTINEL_PTR(const char*);
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_list_name(list, 1, &name), OF_STATUS_OUT_OF_RANGE, "of_tensor_list_name", "1");
  ASSERT_STATUS(of_tensor_list_get(list, 5, &t), OF_STATUS_OUT_OF_RANGE, "of_tensor_list_get", "5");
  ASSERT_STATUS(of_tensor_list_name(NULL, 0, &name), OF_STATUS_INVALID_ARGUMENT, "list");
  ASSERT_STATUS(of_tensor_list_get(list, 0, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  ASSERT_STATUS(of_tensor_list_name(list, 0, NULL), OF_STATUS_INVALID_ARGUMENT, "out_name");
  assert_ptr_equal(name, SENTINEL_PTR(const char*));
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  assert_int_equal(of_tensor_list_count(NULL), 0);
  of_tensor_list_destroy(list);
  of_tensor_list_destroy(NULL);

  of_tensor_release(w2);
  of_tensor_release(f32);
  of_tensor_release(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_uniform_normal_constant),
      cmocka_unit_test(test_init_reproducible_across_thread_counts),
      cmocka_unit_test(test_init_kaiming_and_xavier),
      cmocka_unit_test(test_init_errors),
      cmocka_unit_test(test_optimizer_options_init),
      cmocka_unit_test_setup_teardown(test_sgd_steps_by_hand, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_adam_and_adamw_by_hand, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_optimizer_holds_its_parameters, of_test_setup_session,
                                      of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_optimizer_errors, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_training_loop_through_autograd, of_test_setup_session,
                                      of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_loss_scaling, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_safetensors_round_trip, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_safetensors_errors, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
