/* CMocka tests of the lazy-graph section of the C ABI: building by tracing, free tensors held by the
 * session (the seed case), symbolic input dims, runs checked against hand values and eager results,
 * a training graph equal to the same steps done eagerly, the dump, the memory statistics, and every
 * error path (codes, message words, outputs left untouched). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <unistd.h>

#include "capi_op_util.h"

/*===--- helpers ---------------------------------------------------------------------------===*/

#define GRAPH_SENTINEL SENTINEL_PTR(of_graph_t*)

/* The number of (possibly overlapping) occurrences of `needle` in `text`. */
static size_t count_occurrences(const char* text, const char* needle) {
  size_t n = 0;
  for (const char* p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) ++n;
  return n;
}

/* The graph's dump as a NUL-terminated string (caller frees), sized with a capacity-0 call. */
static char* dump_of(const of_graph_t* g) {
  size_t length = 0;
  ASSERT_OK(of_graph_dump(g, NULL, 0, &length));
  char* text = malloc(length + 1);
  assert_non_null(text);
  size_t again = 0;
  ASSERT_OK(of_graph_dump(g, text, length + 1, &again));
  assert_int_equal(again, length);
  assert_int_equal(strlen(text), length);
  return text;
}

/* Fails unless the dump of g contains `needle`; prints the dump otherwise. */
static void expect_dump_contains(const of_graph_t* g, const char* needle) {
  char* text = dump_of(g);
  if (strstr(text, needle) == NULL) {
    print_error("the dump does not contain \"%s\":\n%s\n", needle, text);
    free(text);
    fail();
  }
  free(text);
}

static int32_t is_lazy(const of_tensor_t* t) {
  int32_t lazy = -1;
  ASSERT_OK(of_tensor_is_lazy(t, &lazy));
  return lazy;
}

static size_t free_count(const of_graph_t* g) {
  size_t n = SIZE_MAX;
  ASSERT_OK(of_graph_free_tensor_count(g, &n));
  return n;
}

static of_graph_memory_stats_t stats_of(const of_graph_t* g) {
  of_graph_memory_stats_t st;
  memset(&st, 0xab, sizeof st);
  st.struct_size = sizeof st;
  ASSERT_OK(of_graph_memory_stats(g, &st));
  assert_int_equal(st.struct_size, sizeof st);
  return st;
}

/* A deleter that frees the adopted memory and counts its calls in *(int*)user_data. */
static void count_delete(void* data, void* user_data) {
  free(data);
  ++*(int*)user_data;
}

/*===--- options, create, destroy ----------------------------------------------------------===*/

static void test_options_init(void** state) {
  (void)state;
  of_graph_options_t o;
  memset(&o, 0x7f, sizeof o);
  of_graph_options_init(&o);
  assert_int_equal(o.struct_size, sizeof(of_graph_options_t));
  assert_int_equal(o.fuse, 1);
  assert_int_equal(o.inplace, 1);
  assert_int_equal(o.plan_memory, 1);
  assert_int_equal(o.plan_cache_size, 8);
  assert_int_equal(o.profile, 0);
  of_graph_options_init(NULL);
}

static void test_create_and_destroy(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "named", NULL, &g));
  assert_non_null(g);
  expect_dump_contains(g, "graph \"named\" (empty): 0 inputs");
  size_t n = SIZE_MAX;
  ASSERT_OK(of_graph_input_count(g, &n));
  assert_int_equal(n, 0);
  ASSERT_OK(of_graph_output_count(g, &n));
  assert_int_equal(n, 0);
  assert_int_equal(free_count(g), 0);
  of_graph_destroy(g);

  /* NULL and empty names get "graph_<id>"; two such graphs get different names. */
  of_graph_t* a = NULL;
  of_graph_t* b = NULL;
  ASSERT_OK(of_graph_create(s, NULL, NULL, &a));
  ASSERT_OK(of_graph_create(s, "", NULL, &b));
  char* ta = dump_of(a);
  char* tb = dump_of(b);
  assert_true(strncmp(ta, "graph \"graph_", 13) == 0);
  assert_true(strncmp(tb, "graph \"graph_", 13) == 0);
  assert_true(strcmp(ta, tb) != 0);
  free(ta);
  free(tb);
  of_graph_destroy(a);
  of_graph_destroy(b);

  /* Options given explicitly, and a caller's older (smaller) struct: the missing fields default. */
  of_graph_options_t o;
  of_graph_options_init(&o);
  o.fuse = 0;
  ASSERT_OK(of_graph_create(s, "opts", &o, &g));
  of_graph_destroy(g);
  o.struct_size = sizeof(size_t);
  ASSERT_OK(of_graph_create(s, "old", &o, &g));
  of_graph_destroy(g);
  of_graph_destroy(NULL);
}

static void test_create_errors(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = GRAPH_SENTINEL;
  ASSERT_STATUS(of_graph_create(NULL, "g", NULL, &g), OF_STATUS_INVALID_ARGUMENT, "of_graph_create", "session");
  ASSERT_STATUS(of_graph_create(s, "g", NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_create", "out_graph");
  of_graph_options_t o;
  of_graph_options_init(&o);
  o.fuse = 2;
  ASSERT_STATUS(of_graph_create(s, "g", &o, &g), OF_STATUS_INVALID_ARGUMENT, "options->fuse", "2");
  of_graph_options_init(&o);
  o.inplace = -1;
  ASSERT_STATUS(of_graph_create(s, "g", &o, &g), OF_STATUS_INVALID_ARGUMENT, "options->inplace", "-1");
  of_graph_options_init(&o);
  o.plan_memory = 7;
  ASSERT_STATUS(of_graph_create(s, "g", &o, &g), OF_STATUS_INVALID_ARGUMENT, "options->plan_memory", "7");
  of_graph_options_init(&o);
  o.profile = 3;
  ASSERT_STATUS(of_graph_create(s, "g", &o, &g), OF_STATUS_INVALID_ARGUMENT, "options->profile", "3");
  of_graph_options_init(&o);
  o.struct_size = 0;
  ASSERT_STATUS(of_graph_create(s, "g", &o, &g), OF_STATUS_INVALID_ARGUMENT, "of_graph_create", "struct_size");
  assert_ptr_equal(g, GRAPH_SENTINEL);
}

/* Every function that takes a graph names it when it is NULL; outputs are left alone. */
static void test_null_graph(void** state) {
  of_session_t* s = *state;
  of_tensor_t* t = OUT_SENTINEL;
  of_tensor_t* e = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  size_t n = 77;
  const char* name = SENTINEL_PTR(const char*);
  char buf[4] = "abc";
  of_graph_memory_stats_t st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  ASSERT_STATUS(of_graph_begin_build(NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_begin_build", "graph");
  ASSERT_STATUS(of_graph_add_input(NULL, "x", F32, DIMS(2), &t), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_input",
                "graph");
  ASSERT_STATUS(of_graph_add_parameter(NULL, e, "w"), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_parameter", "graph");
  ASSERT_STATUS(of_graph_add_output(NULL, e), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_output", "graph");
  ASSERT_STATUS(of_graph_add_optimizer(NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_optimizer", "graph");
  ASSERT_STATUS(of_graph_end_build(NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_end_build", "graph");
  ASSERT_STATUS(of_graph_run(NULL, NULL, 0, NULL, 0), OF_STATUS_INVALID_ARGUMENT, "of_graph_run", "graph");
  ASSERT_STATUS(of_graph_input_count(NULL, &n), OF_STATUS_INVALID_ARGUMENT, "of_graph_input_count", "graph");
  ASSERT_STATUS(of_graph_output_count(NULL, &n), OF_STATUS_INVALID_ARGUMENT, "of_graph_output_count", "graph");
  ASSERT_STATUS(of_graph_free_tensor_count(NULL, &n), OF_STATUS_INVALID_ARGUMENT, "of_graph_free_tensor_count",
                "graph");
  ASSERT_STATUS(of_graph_free_tensor_name(NULL, 0, &name), OF_STATUS_INVALID_ARGUMENT, "of_graph_free_tensor_name",
                "graph");
  ASSERT_STATUS(of_graph_dump(NULL, buf, sizeof buf, &n), OF_STATUS_INVALID_ARGUMENT, "of_graph_dump", "graph");
  ASSERT_STATUS(of_graph_memory_stats(NULL, &st), OF_STATUS_INVALID_ARGUMENT, "of_graph_memory_stats", "graph");
  assert_ptr_equal(t, OUT_SENTINEL);
  assert_int_equal(n, 77);
  assert_ptr_equal(name, SENTINEL_PTR(const char*));
  assert_string_equal(buf, "abc");
  assert_int_equal(st.node_count, 0);
  of_tensor_release(e);
}

/*===--- the seed case ---------------------------------------------------------------------===*/

/* y = x > 0.5 and z = y && mask, the mask adopted from caller memory during the build: both the 0.5
 * and the mask are free tensors held by the session for the graph, released when it is destroyed. */
static void test_seed_free_tensors(void** state) {
  of_session_t* s = *state;
  int deleted = 0;
  uint8_t* mask_data = malloc(4);
  assert_non_null(mask_data);
  mask_data[0] = 1;
  mask_data[1] = 0;
  mask_data[2] = 1;
  mask_data[3] = 1;

  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "seed", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(OF_DIM_UNKNOWN, 4), &x));
  assert_int_equal(is_lazy(x), 1);
  int64_t dims[2] = {0, 0};
  ASSERT_OK(of_tensor_dims(x, dims, 2));
  assert_true(dims[0] == OF_DIM_UNKNOWN);
  assert_int_equal(dims[1], 4);

  of_tensor_t* y = NULL;
  ASSERT_OK(of_gt_scalar(s, x, 0.5, &y));
  assert_int_equal(is_lazy(y), 1);
  const of_dtype_t* dt = NULL;
  ASSERT_OK(of_tensor_dtype(y, &dt));
  assert_ptr_equal(dt, BOOL);

  /* Tensors created during the build are eager. */
  of_tensor_t* mask = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, BOOL, DIMS(4), mask_data, 4, count_delete, &deleted, &mask));
  assert_int_equal(is_lazy(mask), 0);
  of_tensor_t* z = NULL;
  ASSERT_OK(of_logical_and(s, y, mask, &z));
  assert_int_equal(is_lazy(z), 1);
  ASSERT_OK(of_tensor_dims(z, dims, 2));
  assert_true(dims[0] == OF_DIM_UNKNOWN);
  assert_int_equal(dims[1], 4);

  ASSERT_OK(of_graph_add_output(g, y));
  ASSERT_OK(of_graph_add_output(g, z));
  ASSERT_OK(of_graph_end_build(g));
  of_tensor_release(mask); /* the session keeps it for the graph */
  assert_int_equal(deleted, 0);

  size_t n = 0;
  ASSERT_OK(of_graph_input_count(g, &n));
  assert_int_equal(n, 1);
  ASSERT_OK(of_graph_output_count(g, &n));
  assert_int_equal(n, 2);

  /* Two free tensors, in the order the build met them: the scalar 0.5, then the mask. */
  assert_int_equal(free_count(g), 2);
  const char* name0 = NULL;
  const char* name1 = NULL;
  ASSERT_OK(of_graph_free_tensor_name(g, 0, &name0));
  ASSERT_OK(of_graph_free_tensor_name(g, 1, &name1));
  assert_string_equal(name0, "free_0");
  assert_string_equal(name1, "free_1");
  const char* again = NULL;
  ASSERT_OK(of_graph_free_tensor_name(g, 0, &again));
  assert_ptr_equal(again, name0); /* valid until the graph is destroyed: the same storage */

  /* One "non-trainable" variable line per free tensor, naming it with its dtype and shape. */
  char* text = dump_of(g);
  assert_int_equal(count_occurrences(text, "non-trainable"), 2);
  assert_int_equal(count_occurrences(text, " trainable\n"), 0);
  assert_int_equal(count_occurrences(text, "\nvariable "), 2);
  assert_non_null(strstr(text, "graph \"seed\" (built): 1 inputs, 2 variables (0 trainable, 2 free)"));
  assert_non_null(strstr(text, "input %0 x: float32 (?, 4)\n"));
  assert_non_null(strstr(text, " free_0: float32 () non-trainable\n"));
  assert_non_null(strstr(text, " free_1: bool (4,) non-trainable\n"));
  assert_null(strstr(text, "specialization")); /* nothing compiled yet */
  free(text);

  /* Batch 2, then 3: one graph runs both sizes. */
  of_tensor_t* x2 = make_tensor(s, F32, DIMS(2, 4), VALS(0.1, 0.6, 0.5, 0.9, 1.0, -1.0, 0.7, 0.2));
  of_tensor_t* out[2] = {NULL, NULL};
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){x2}, 1, out, 2));
  assert_int_equal(is_lazy(out[0]), 0);
  EXPECT_TENSOR(out[0], BOOL, DIMS(2, 4), VALS(0, 1, 0, 1, 1, 0, 1, 0), 0);
  EXPECT_TENSOR(out[1], BOOL, DIMS(2, 4), VALS(0, 0, 0, 1, 1, 0, 1, 0), 0);
  of_tensor_release(out[0]);
  of_tensor_release(out[1]);
  assert_int_equal(stats_of(g).specialization_count, 1);

  of_tensor_t* x3 =
      make_tensor(s, F32, DIMS(3, 4), VALS(0.1, 0.6, 0.5, 0.9, 1.0, -1.0, 0.7, 0.2, 0.9, 0.9, 0.9, 0.4));
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){x3}, 1, out, 2));
  EXPECT_TENSOR(out[0], BOOL, DIMS(3, 4), VALS(0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0), 0);
  EXPECT_TENSOR(out[1], BOOL, DIMS(3, 4), VALS(0, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0), 0);
  assert_int_equal(stats_of(g).specialization_count, 2);
  of_tensor_t* keep = out[1]; /* an output outlives the graph */
  of_tensor_release(out[0]);

  /* Batch 2 again reuses its specialization. */
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){x2}, 1, out, 2));
  EXPECT_TENSOR(out[1], BOOL, DIMS(2, 4), VALS(0, 0, 0, 1, 1, 0, 1, 0), 0);
  of_tensor_release(out[0]);
  of_tensor_release(out[1]);
  assert_int_equal(stats_of(g).specialization_count, 2);
  text = dump_of(g);
  assert_int_equal(count_occurrences(text, "specialization ("), 2);
  free(text);
  assert_int_equal(deleted, 0);

  of_graph_destroy(g);
  assert_int_equal(deleted, 1); /* the session released the mask exactly once */
  EXPECT_TENSOR(keep, BOOL, DIMS(3, 4), VALS(0, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0), 0);
  of_tensor_release(keep);
  /* The lazy handles are released like any tensor, after their graph too. */
  of_tensor_release(x);
  of_tensor_release(y);
  of_tensor_release(z);
  of_tensor_release(x2);
  of_tensor_release(x3);
  assert_int_equal(deleted, 1);
}

/*===--- build state and arguments ---------------------------------------------------------===*/

static void test_build_state_errors(void** state) {
  of_session_t* s = *state;
  of_tensor_t* w = make_tensor(s, F64, DIMS(2), VALS(1, 2));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &w, 1, NULL, &opt));
  of_tensor_t* t = OUT_SENTINEL;
  of_tensor_t* out = OUT_SENTINEL;

  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "states", NULL, &g));
  /* Build functions outside a build. */
  ASSERT_STATUS(of_graph_add_input(g, "x", F32, DIMS(2), &t), OF_STATUS_FAILED_PRECONDITION, "of_graph_add_input",
                "'states'", "not being built");
  ASSERT_STATUS(of_graph_add_parameter(g, w, "w"), OF_STATUS_FAILED_PRECONDITION, "of_graph_add_parameter",
                "not being built");
  ASSERT_STATUS(of_graph_add_output(g, w), OF_STATUS_FAILED_PRECONDITION, "of_graph_add_output", "not being built");
  ASSERT_STATUS(of_graph_add_optimizer(g, opt), OF_STATUS_FAILED_PRECONDITION, "of_graph_add_optimizer",
                "not being built");
  ASSERT_STATUS(of_graph_end_build(g), OF_STATUS_FAILED_PRECONDITION, "of_graph_end_build", "not being built");
  /* A run of a graph never built. */
  ASSERT_STATUS(of_graph_run(g, NULL, 0, NULL, 0), OF_STATUS_FAILED_PRECONDITION, "of_graph_run", "'states'",
                "never built");
  /* Whatever the other arguments (the graph has no outputs yet, and these inputs are NULL). */
  of_tensor_t* unbuilt_out = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_graph_run(g, NULL, 2, &unbuilt_out, 1), OF_STATUS_FAILED_PRECONDITION, "of_graph_run", "'states'",
                "never built");
  assert_ptr_equal(unbuilt_out, SENTINEL_PTR(of_tensor_t*));

  ASSERT_OK(of_graph_begin_build(g));
  ASSERT_STATUS(of_graph_begin_build(g), OF_STATUS_FAILED_PRECONDITION, "of_graph_begin_build", "'states'",
                "already being built");
  of_graph_t* other = NULL;
  ASSERT_OK(of_graph_create(s, "other", NULL, &other));
  ASSERT_STATUS(of_graph_begin_build(other), OF_STATUS_FAILED_PRECONDITION, "another graph is being built");
  ASSERT_STATUS(of_graph_run(g, NULL, 0, NULL, 0), OF_STATUS_FAILED_PRECONDITION, "still being built");
  /* Nothing declared yet: end_build refuses. */
  ASSERT_STATUS(of_graph_end_build(g), OF_STATUS_FAILED_PRECONDITION, "of_graph_end_build", "no outputs");

  /* add_input's arguments. */
  ASSERT_STATUS(of_graph_add_input(g, NULL, F32, DIMS(2), &t), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_input",
                "name");
  ASSERT_STATUS(of_graph_add_input(g, "", F32, DIMS(2), &t), OF_STATUS_INVALID_ARGUMENT, "name", "empty");
  ASSERT_STATUS(of_graph_add_input(g, "x", NULL, DIMS(2), &t), OF_STATUS_INVALID_ARGUMENT, "dtype");
  ASSERT_STATUS(of_graph_add_input(g, "x", F32, NULL, 2, &t), OF_STATUS_INVALID_ARGUMENT, "dims");
  ASSERT_STATUS(of_graph_add_input(g, "x", F32, DIMS(2, -5), &t), OF_STATUS_INVALID_ARGUMENT, "dims[1]");
  ASSERT_STATUS(of_graph_add_input(g, "x", F32, DIMS(2), NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  assert_ptr_equal(t, OUT_SENTINEL);
  /* A failed add_input declared nothing: "x" is still free, and a 0-d input needs no dims. */
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(2), &x));
  of_tensor_t* scale = NULL;
  ASSERT_OK(of_graph_add_input(g, "scale", F32, NULL, 0, &scale));
  ASSERT_STATUS(of_graph_add_input(g, "x", F64, DIMS(3), &t), OF_STATUS_INVALID_ARGUMENT, "'states'",
                "already has an input named 'x'");
  assert_ptr_equal(t, OUT_SENTINEL);
  size_t n = 0;
  ASSERT_OK(of_graph_input_count(g, &n));
  assert_int_equal(n, 2);

  /* add_parameter's arguments. */
  of_tensor_t* ints = make_tensor(s, I64, DIMS(2), VALS(1, 2));
  ASSERT_STATUS(of_graph_add_parameter(g, NULL, "p"), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_parameter",
                "tensor");
  ASSERT_STATUS(of_graph_add_parameter(g, w, NULL), OF_STATUS_INVALID_ARGUMENT, "name");
  ASSERT_STATUS(of_graph_add_parameter(g, w, ""), OF_STATUS_INVALID_ARGUMENT, "name", "empty");
  ASSERT_STATUS(of_graph_add_parameter(g, ints, "p"), OF_STATUS_INVALID_ARGUMENT, "'p'", "floating", "int64");
  ASSERT_STATUS(of_graph_add_parameter(g, x, "p"), OF_STATUS_INVALID_ARGUMENT, "'p'", "lazy");
  /* A tensor already used in the build cannot be registered afterwards. */
  of_tensor_t* bias = make_tensor(s, F32, DIMS(2), VALS(0.5, -0.5));
  of_tensor_t* xb = NULL;
  ASSERT_OK(of_add(s, x, bias, &xb));
  ASSERT_STATUS(of_graph_add_parameter(g, bias, "bias"), OF_STATUS_INVALID_ARGUMENT, "register parameters before");
  of_tensor_t* gain = make_tensor(s, F32, DIMS(2), VALS(2, 3));
  ASSERT_OK(of_graph_add_parameter(g, gain, "gain"));
  ASSERT_STATUS(of_graph_add_parameter(g, w, "gain"), OF_STATUS_INVALID_ARGUMENT, "already has a variable named",
                "'gain'");

  /* add_output's arguments: NULL, an eager tensor. */
  ASSERT_STATUS(of_graph_add_output(g, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_output", "tensor");
  ASSERT_STATUS(of_graph_add_output(g, bias), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_output", "eager tensor");
  ASSERT_STATUS(of_graph_add_optimizer(g, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_optimizer", "optimizer");

  /* out = (x + bias) * gain * scale, 0-d scale */
  of_tensor_t* xg = NULL;
  ASSERT_OK(of_mul(s, xb, gain, &xg));
  ASSERT_OK(of_mul(s, xg, scale, &out));
  ASSERT_OK(of_graph_add_output(g, out));
  ASSERT_OK(of_graph_end_build(g));
  ASSERT_OK(of_graph_output_count(g, &n));
  assert_int_equal(n, 1);
  /* A variable line per registered/used tensor: gain trainable, bias free. */
  expect_dump_contains(g, " gain: float32 (2,) trainable\n");
  expect_dump_contains(g, " free_0: float32 (2,) non-trainable\n");
  assert_int_equal(free_count(g), 1);

  /* Built: one build per graph. */
  ASSERT_STATUS(of_graph_begin_build(g), OF_STATUS_FAILED_PRECONDITION, "of_graph_begin_build", "already built");
  ASSERT_STATUS(of_graph_add_input(g, "y", F32, DIMS(2), &t), OF_STATUS_FAILED_PRECONDITION, "already built");
  ASSERT_STATUS(of_graph_end_build(g), OF_STATUS_FAILED_PRECONDITION, "already built");
  assert_ptr_equal(t, OUT_SENTINEL);
  /* The build ended, so the other graph can build now. */
  ASSERT_OK(of_graph_begin_build(other));

  of_tensor_t* xv = make_tensor(s, F32, DIMS(2), VALS(1, 4));
  of_tensor_t* sv = make_tensor(s, F32, DIMS0, VALS(0.5));
  of_tensor_t* r = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv, sv}, 2, &r, 1));
  EXPECT_TENSOR(r, F32, DIMS(2), VALS((1 + 0.5) * 2 * 0.5, (4 - 0.5) * 3 * 0.5), 1e-6);
  of_tensor_release(r);

  of_graph_destroy(other); /* during its build: ends it */
  of_graph_destroy(g);
  of_tensor_t* tensors[] = {x, scale, ints, bias, xb, gain, xg, out, xv, sv};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
  of_optimizer_destroy(opt);
  of_tensor_release(w);
}

/* A non-leaf tensor (computed by an op that recorded autograd) is no parameter. */
static void test_add_parameter_non_leaf(void** state) {
  of_session_t* s = *state;
  of_tensor_t* p = make_tensor(s, F64, DIMS(2), VALS(1, 2));
  ASSERT_OK(of_tensor_set_requires_grad(p, 1));
  of_tensor_t* twice = NULL;
  ASSERT_OK(of_mul_scalar(s, p, 2, &twice));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "nonleaf", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  ASSERT_STATUS(of_graph_add_parameter(g, twice, "twice"), OF_STATUS_INVALID_ARGUMENT, "'twice'", "leaf");
  of_graph_destroy(g);
  of_tensor_release(twice);
  of_tensor_release(p);
}

/* A registered leaf that did not require grad becomes trainable: backward traces its gradient, the
 * optimizer attaches, and a run updates it (w -= lr * d sum(w * x) / dw = lr * x). */
static void test_add_parameter_makes_trainable(void** state) {
  of_session_t* s = *state;
  of_tensor_t* w = make_tensor(s, F64, DIMS(2), VALS(1, 2));
  of_sgd_options_t sgd;
  of_sgd_options_init(&sgd);
  sgd.lr = 0.5;
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &w, 1, &sgd, &opt));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "registered", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  ASSERT_OK(of_graph_add_parameter(g, w, "w"));
  int32_t requires = 0;
  ASSERT_OK(of_tensor_requires_grad(w, &requires));
  assert_int_equal(requires, 1);
  of_tensor_t *x = NULL, *y = NULL, *loss = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F64, DIMS(2), &x));
  ASSERT_OK(of_mul(s, w, x, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  ASSERT_OK(of_graph_add_optimizer(g, opt));
  ASSERT_OK(of_graph_add_output(g, loss));
  ASSERT_OK(of_graph_end_build(g));
  expect_dump_contains(g, "variable %0 w: float64 (2,) trainable");
  of_tensor_t* xv = make_tensor(s, F64, DIMS(2), VALS(4, -2));
  of_tensor_t* lv = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv}, 1, &lv, 1));
  EXPECT_TENSOR(lv, F64, DIMS0, VALS(0), 0); /* 1 * 4 + 2 * -2 */
  EXPECT_TENSOR(w, F64, DIMS(2), VALS(-1, 3), 0);
  of_tensor_t* tensors[] = {w, x, y, loss, xv, lv};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
  of_graph_destroy(g);
  of_optimizer_destroy(opt);
}

/* A dim symbol of another session is refused, naming both sessions. */
static void test_add_input_symbol_of_another_session(void** state) {
  of_session_t* s = *state;
  of_session_t* other = of_test_session();
  int64_t n_other = 0, n_mine = 0;
  ASSERT_OK(of_session_dim_symbol(other, "N", &n_other));
  ASSERT_OK(of_session_dim_symbol(s, "N", &n_mine));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "symbols", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = OUT_SENTINEL;
  ASSERT_STATUS(of_graph_add_input(g, "x", F32, DIMS(n_other, 3), &x), OF_STATUS_INVALID_ARGUMENT,
                "of_graph_add_input", "'x'", "dims[0]", "'N'", "session", "'symbols'");
  assert_ptr_equal(x, OUT_SENTINEL);
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(n_mine, 3), &x));
  of_tensor_release(x);
  of_graph_destroy(g);
  of_session_destroy(other);
}

/* A failed of_graph_add_input records nothing: the graph neither counts the input nor keeps its name
 * (it used to append the input before its sizes were found to overflow). */
static void test_failed_add_input_records_nothing(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "overflow", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = OUT_SENTINEL;
  ASSERT_STATUS(of_graph_add_input(g, "x", F32, DIMS(INT64_MAX, 2), &x), OF_STATUS_OUT_OF_RANGE,
                "of_graph_add_input", "overflows");
  assert_ptr_equal(x, OUT_SENTINEL);
  ASSERT_STATUS(of_graph_add_input(g, "x", F32, DIMS(OF_DIM_UNKNOWN, INT64_MAX, 2), &x), OF_STATUS_OUT_OF_RANGE,
                "of_graph_add_input", "overflows");
  assert_ptr_equal(x, OUT_SENTINEL);
  size_t n = 99;
  ASSERT_OK(of_graph_input_count(g, &n));
  assert_int_equal(n, 0);
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(2), &x));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_relu(s, x, &y));
  ASSERT_OK(of_graph_add_output(g, y));
  ASSERT_OK(of_graph_end_build(g));
  ASSERT_OK(of_graph_input_count(g, &n));
  assert_int_equal(n, 1);
  of_tensor_t* in = make_tensor(s, F32, DIMS(2), VALS(-1, 2));
  of_tensor_t* out = NULL;
  const of_tensor_t* inputs[] = {in};
  ASSERT_OK(of_graph_run(g, inputs, 1, &out, 1));
  EXPECT_TENSOR(out, F32, DIMS(2), VALS(0, 2), 0);
  of_tensor_release(out);
  of_tensor_release(in);
  of_tensor_release(y);
  of_tensor_release(x);
  of_graph_destroy(g);
}

/* Destroying a graph in the middle of its build ends the build: ops run eagerly again. */
static void test_destroy_during_build(void** state) {
  of_session_t* s = *state;
  int deleted = 0;
  float* data = malloc(2 * sizeof(float));
  assert_non_null(data);
  data[0] = 1;
  data[1] = -2;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "abandoned", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(2), &x));
  of_tensor_t* free_t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, F32, DIMS(2), data, 2 * sizeof(float), count_delete, &deleted, &free_t));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_add(s, x, free_t, &y));
  assert_int_equal(is_lazy(y), 1);
  of_tensor_release(free_t);
  assert_int_equal(deleted, 0);
  of_graph_destroy(g);
  assert_int_equal(deleted, 1);

  of_tensor_t* e = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  of_tensor_t* r = NULL;
  ASSERT_OK(of_neg(s, e, &r));
  assert_int_equal(is_lazy(r), 0);
  EXPECT_TENSOR(r, F32, DIMS(2), VALS(-1, -2), 0);
  of_tensor_release(r);
  /* No build is left open on this thread. */
  of_graph_t* next = NULL;
  ASSERT_OK(of_graph_create(s, "next", NULL, &next));
  ASSERT_OK(of_graph_begin_build(next));
  of_graph_destroy(next);
  of_tensor_release(e);
  of_tensor_release(x);
  of_tensor_release(y);
}

/*===--- runs: symbols and input checks ----------------------------------------------------===*/

static void test_run_checks_inputs(void** state) {
  of_session_t* s = *state;
  int64_t N = 0;
  ASSERT_OK(of_session_dim_symbol(s, "N", &N));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "pair", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* a = NULL;
  of_tensor_t* b = NULL;
  ASSERT_OK(of_graph_add_input(g, "a", F32, DIMS(N, 3), &a));
  ASSERT_OK(of_graph_add_input(g, "b", F32, DIMS(N, 3), &b));
  of_tensor_t* c = NULL;
  ASSERT_OK(of_add(s, a, b, &c));
  int64_t dims[2] = {0, 0};
  ASSERT_OK(of_tensor_dims(c, dims, 2));
  assert_true(dims[0] == N); /* N + N is N: the symbol flows */
  assert_int_equal(of_dim_is_symbol(dims[0]), 1);
  assert_int_equal(dims[1], 3);
  ASSERT_OK(of_graph_add_output(g, c));
  ASSERT_OK(of_graph_end_build(g));
  expect_dump_contains(g, "input %0 a: float32 (N, 3)\n");
  expect_dump_contains(g, "input %1 b: float32 (N, 3)\n");

  of_tensor_t* a2 = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* b2 = make_tensor(s, F32, DIMS(2, 3), VALS(10, 20, 30, 40, 50, 60));
  of_tensor_t* b3 = make_tensor(s, F32, DIMS(3, 3), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1));
  of_tensor_t* a64 = make_tensor(s, F64, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* a_rank3 = make_tensor(s, F32, DIMS(2, 3, 1), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* a_24 = make_tensor(s, F32, DIMS(2, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  of_tensor_t* b_24 = make_tensor(s, F32, DIMS(2, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  of_tensor_t* r = OUT_SENTINEL;
  of_tensor_t* outs[2] = {OUT_SENTINEL, OUT_SENTINEL};

  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a2}, 1, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "of_graph_run", "'pair'", "2 input(s), got 1");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a2, b2, b2}, 3, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "2 input(s), got 3");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a64, b2}, 2, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "input 'a'", "float32", "float64");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a_rank3, b2}, 2, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "input 'a'", "(N, 3)", "(2, 3, 1)");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a_24, b_24}, 2, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "input 'a'", "(N, 3)", "(2, 4)");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a2, b3}, 2, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "input 'b'", "N", "3", "2");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a, b2}, 2, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "input 'a'", "lazy");
  ASSERT_STATUS(of_graph_run(g, NULL, 2, &r, 1), OF_STATUS_INVALID_ARGUMENT, "of_graph_run", "inputs");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a2, NULL}, 2, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "inputs[1]");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a2, b2}, 2, outs, 2), OF_STATUS_INVALID_ARGUMENT,
                "n_out_tensors", "2", "1");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a2, b2}, 2, NULL, 0), OF_STATUS_INVALID_ARGUMENT,
                "n_out_tensors", "0");
  ASSERT_STATUS(of_graph_run(g, (const of_tensor_t* const[]){a2, b2}, 2, NULL, 1), OF_STATUS_INVALID_ARGUMENT,
                "out_tensors");
  assert_ptr_equal(r, OUT_SENTINEL);
  assert_ptr_equal(outs[0], OUT_SENTINEL);
  assert_ptr_equal(outs[1], OUT_SENTINEL);
  /* No failed run compiled anything. */
  of_graph_memory_stats_t st = stats_of(g);
  assert_int_equal(st.specialization_count, 0);
  assert_int_equal(st.node_count, 0);

  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){a2, b2}, 2, &r, 1));
  EXPECT_TENSOR(r, F32, DIMS(2, 3), VALS(11, 22, 33, 44, 55, 66), 0);
  of_tensor_release(r);
  /* The sizes of a failed run left no binding behind: N = 3 now works. */
  of_tensor_t* a3 = make_tensor(s, F32, DIMS(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){a3, b3}, 2, &r, 1));
  EXPECT_TENSOR(r, F32, DIMS(3, 3), VALS(2, 3, 4, 5, 6, 7, 8, 9, 10), 0);
  of_tensor_release(r);
  assert_int_equal(stats_of(g).specialization_count, 2);

  of_graph_destroy(g);
  of_tensor_t* tensors[] = {a, b, c, a2, b2, b3, a3, a64, a_rank3, a_24, b_24};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
}

/*===--- lazy tensors outside their build ---------------------------------------------------===*/

static void test_lazy_tensor_misuse(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "g1", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(2), &x));
  of_tensor_t* u = NULL;
  ASSERT_OK(of_graph_add_input(g, "u", F32, DIMS(OF_DIM_UNKNOWN, 2), &u));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_neg(s, x, &y));

  /* Lazy tensors have dtype and dims but no data. A static shape gives a numel; an unknown dim none. */
  int64_t numel = -1;
  size_t nbytes = 0;
  ASSERT_OK(of_tensor_numel(y, &numel));
  assert_int_equal(numel, 2);
  ASSERT_OK(of_tensor_nbytes(y, &nbytes));
  assert_int_equal(nbytes, 8);
  numel = 99;
  nbytes = 99;
  ASSERT_STATUS(of_tensor_numel(u, &numel), OF_STATUS_INVALID_ARGUMENT, "of_tensor_numel", "lazy", "(?, 2)");
  ASSERT_STATUS(of_tensor_nbytes(u, &nbytes), OF_STATUS_INVALID_ARGUMENT, "of_tensor_nbytes", "lazy", "(?, 2)");
  assert_int_equal(numel, 99);
  assert_int_equal(nbytes, 99);
  float host[2] = {7, 7};
  ASSERT_STATUS(of_tensor_copy_to_host(y, host, sizeof host), OF_STATUS_FAILED_PRECONDITION, "of_tensor_copy_to_host",
                "lazy");
  assert_true(host[0] == 7 && host[1] == 7);
  of_tensor_t* moved = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_copy_to_device(y, OF_DEVICE_CPU, 0, &moved), OF_STATUS_FAILED_PRECONDITION,
                "of_tensor_copy_to_device", "lazy");
  assert_ptr_equal(moved, SENTINEL_PTR(of_tensor_t*));

  /* of_tensor_is_lazy's own arguments. */
  int32_t flag = 5;
  ASSERT_STATUS(of_tensor_is_lazy(NULL, &flag), OF_STATUS_INVALID_ARGUMENT, "of_tensor_is_lazy", "tensor");
  ASSERT_STATUS(of_tensor_is_lazy(y, NULL), OF_STATUS_INVALID_ARGUMENT, "of_tensor_is_lazy", "out_is_lazy");
  assert_int_equal(flag, 5);

  /* Another session on this thread stays eager while the build is open. */
  of_session_t* eager = of_test_session();
  of_tensor_t* e = make_tensor(eager, F32, DIMS(2), VALS(1, 2));
  of_tensor_t* r = NULL;
  ASSERT_OK(of_neg(eager, e, &r));
  assert_int_equal(is_lazy(r), 0);
  EXPECT_TENSOR(r, F32, DIMS(2), VALS(-1, -2), 0);
  of_tensor_release(r);
  /* ... and refuses this build's lazy tensors. */
  r = OUT_SENTINEL;
  ASSERT_STATUS(of_add(eager, y, e, &r), OF_STATUS_FAILED_PRECONDITION, "of_add", "lazy");
  assert_ptr_equal(r, OUT_SENTINEL);

  ASSERT_OK(of_graph_add_output(g, y));
  ASSERT_OK(of_graph_end_build(g));

  /* After the build, an eager op on the lazy tensor. */
  ASSERT_STATUS(of_neg(s, y, &r), OF_STATUS_FAILED_PRECONDITION, "of_neg", "lazy");
  ASSERT_STATUS(of_add(s, e, y, &r), OF_STATUS_FAILED_PRECONDITION, "of_add", "lazy");
  assert_ptr_equal(r, OUT_SENTINEL);

  /* In another graph's build: refused, and it cannot be that graph's output either. */
  of_graph_t* g2 = NULL;
  ASSERT_OK(of_graph_create(s, "g2", NULL, &g2));
  ASSERT_OK(of_graph_begin_build(g2));
  ASSERT_STATUS(of_neg(s, y, &r), OF_STATUS_INVALID_ARGUMENT, "of_neg", "another graph", "'g2'");
  assert_ptr_equal(r, OUT_SENTINEL);
  ASSERT_STATUS(of_graph_add_output(g2, y), OF_STATUS_INVALID_ARGUMENT, "of_graph_add_output", "'g2'",
                "another graph");
  of_tensor_t* z = NULL;
  ASSERT_OK(of_graph_add_input(g2, "z", F32, DIMS(2), &z));
  of_tensor_t* z2 = NULL;
  ASSERT_OK(of_mul(s, z, z, &z2));
  ASSERT_OK(of_graph_add_output(g2, z2));
  ASSERT_OK(of_graph_end_build(g2));
  /* g1's lazy tensor is no input of g2 either. */
  ASSERT_STATUS(of_graph_run(g2, (const of_tensor_t* const[]){y}, 1, &r, 1), OF_STATUS_INVALID_ARGUMENT,
                "input 'z'", "lazy");
  assert_ptr_equal(r, OUT_SENTINEL);

  /* Both graphs still run. */
  of_tensor_t* xv = make_tensor(s, F32, DIMS(2), VALS(3, -4));
  of_tensor_t* uv = make_tensor(s, F32, DIMS(1, 2), VALS(0, 0));
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv, uv}, 2, &r, 1));
  EXPECT_TENSOR(r, F32, DIMS(2), VALS(-3, 4), 0);
  of_tensor_release(r);
  ASSERT_OK(of_graph_run(g2, (const of_tensor_t* const[]){xv}, 1, &r, 1));
  EXPECT_TENSOR(r, F32, DIMS(2), VALS(9, 16), 0);
  of_tensor_release(r);

  of_graph_destroy(g2);
  of_graph_destroy(g);
  of_tensor_t* tensors[] = {x, u, y, e, z, z2, xv, uv};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
  of_session_destroy(eager);
}

/*===--- threads ---------------------------------------------------------------------------===*/

struct thread_args {
  of_session_t* session;
  of_graph_t* graph;
  of_status_t* add_input_status; /* from a build function called on the wrong thread */
  int32_t op_is_lazy;            /* of an op of the building session on this thread */
  double op_value;
  of_tensor_t* run_output;       /* of_graph_run from this thread */
};

static void* other_thread_during_build(void* p) {
  struct thread_args* a = p;
  of_tensor_t* t = NULL;
  a->add_input_status = of_graph_add_input(a->graph, "late", F32, (const int64_t[]){1}, 1, &t);
  of_tensor_release(t);
  /* Statuses are freed here; failures show as op_is_lazy != 0 or a wrong op_value. */
  of_tensor_t* one = NULL;
  of_tensor_t* neg = NULL;
  float v = 0;
  of_status_t* st = of_tensor_full(a->session, F32, NULL, 0, 1.5, NULL, &one);
  if (st == NULL) st = of_neg(a->session, one, &neg);
  if (st == NULL) st = of_tensor_is_lazy(neg, &a->op_is_lazy);
  if (st == NULL && a->op_is_lazy == 0) st = of_tensor_copy_to_host(neg, &v, sizeof v);
  if (st == NULL) a->op_value = v;
  of_status_destroy(st);
  of_tensor_release(one);
  of_tensor_release(neg);
  return NULL;
}

static void* other_thread_runs(void* p) {
  struct thread_args* a = p;
  of_tensor_t* xv = NULL;
  const float v[2] = {2, 5};
  if (of_tensor_from_data(a->session, F32, (const int64_t[]){2}, 1, v, sizeof v, NULL, &xv) != NULL) return NULL;
  of_status_t* st = of_graph_run(a->graph, (const of_tensor_t* const[]){xv}, 1, &a->run_output, 1);
  of_status_destroy(st);
  of_tensor_release(xv);
  return NULL;
}

static void test_threads(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "threaded", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(2), &x));

  struct thread_args args = {.session = s, .graph = g, .op_is_lazy = -7, .op_value = 0};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, other_thread_during_build, &args), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  /* The build belongs to this thread; the other thread's ops of the same session ran eagerly. */
  ASSERT_STATUS(args.add_input_status, OF_STATUS_FAILED_PRECONDITION, "of_graph_add_input", "another thread");
  assert_int_equal(args.op_is_lazy, 0);
  assert_true(args.op_value == -1.5);

  of_tensor_t* y = NULL;
  ASSERT_OK(of_mul_scalar(s, x, 3, &y));
  ASSERT_OK(of_graph_add_output(g, y));
  ASSERT_OK(of_graph_end_build(g));
  size_t n = 0;
  ASSERT_OK(of_graph_input_count(g, &n));
  assert_int_equal(n, 1); /* "late" was not declared */

  /* Runs may come from any thread. */
  assert_int_equal(pthread_create(&th, NULL, other_thread_runs, &args), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  EXPECT_TENSOR(args.run_output, F32, DIMS(2), VALS(6, 15), 0);
  of_tensor_release(args.run_output);
  of_graph_destroy(g);
  of_tensor_release(x);
  of_tensor_release(y);
}

/*===--- dump ------------------------------------------------------------------------------===*/

static void test_dump_buffer(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "dumped", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F64, DIMS(3), &x));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_exp(s, x, &y));
  ASSERT_OK(of_graph_add_output(g, y));
  /* The dump works during the build too. */
  expect_dump_contains(g, "graph \"dumped\" (building): 1 inputs");
  ASSERT_OK(of_graph_end_build(g));

  /* Capacity 0 (buffer may be NULL) only sizes. */
  size_t length = 0;
  ASSERT_OK(of_graph_dump(g, NULL, 0, &length));
  const char* expect_text =
      "graph \"dumped\" (built): 1 inputs, 0 variables (0 trainable, 0 free), 1 nodes, 1 outputs\n"
      "input %0 x: float64 (3,)\n"
      "node #0: %1 = exp(%0) : float64 (3,)\n"
      "output %1\n";
  assert_int_equal(length, strlen(expect_text));
  char small[4] = {'Z', 'Z', 'Z', 'Z'};
  size_t got = 0;
  ASSERT_OK(of_graph_dump(g, small, 0, &got));
  assert_int_equal(got, length);
  assert_memory_equal(small, "ZZZZ", 4);

  /* The full size. */
  char* full = malloc(length + 1);
  assert_non_null(full);
  ASSERT_OK(of_graph_dump(g, full, length + 1, &got));
  assert_int_equal(got, length);
  assert_string_equal(full, expect_text);

  /* Too small: the first capacity - 1 characters and a NUL, nothing written past the capacity, the full
   * length reported. */
  char buf[32];
  memset(buf, 'Z', sizeof buf);
  ASSERT_OK(of_graph_dump(g, buf, 16, &got));
  assert_int_equal(got, length);
  assert_memory_equal(buf, expect_text, 15);
  assert_int_equal(buf[15], '\0');
  for (size_t i = 16; i < sizeof buf; ++i) assert_int_equal(buf[i], 'Z');
  ASSERT_OK(of_graph_dump(g, buf, 1, &got));
  assert_int_equal(buf[0], '\0');
  assert_int_equal(buf[1], expect_text[1]); /* untouched from the call before */
  /* Exactly the length: all but the last character. */
  char* almost = malloc(length);
  assert_non_null(almost);
  ASSERT_OK(of_graph_dump(g, almost, length, &got));
  assert_int_equal(strlen(almost), length - 1);
  assert_memory_equal(almost, expect_text, length - 1);
  free(almost);

  /* Errors. */
  got = 123;
  ASSERT_STATUS(of_graph_dump(g, buf, sizeof buf, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_dump", "out_length");
  ASSERT_STATUS(of_graph_dump(g, NULL, 5, &got), OF_STATUS_INVALID_ARGUMENT, "of_graph_dump", "out_buffer");
  assert_int_equal(got, 123);

  /* After a run, the compiled specialization follows. */
  of_tensor_t* xv = make_tensor(s, F64, DIMS(3), VALS(0, 1, -1));
  of_tensor_t* r = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv}, 1, &r, 1));
  EXPECT_TENSOR(r, F64, DIMS(3), VALS(1, exp(1.0), exp(-1.0)), 1e-15);
  of_tensor_release(r);
  char* after = dump_of(g);
  assert_true(strncmp(after, expect_text, strlen(expect_text)) == 0);
  assert_non_null(strstr(after + strlen(expect_text), "specialization ("));
  assert_non_null(strstr(after, "step #0: %1 = exp(%0) : float64 (3,) [output]"));
  free(after);

  free(full);
  of_graph_destroy(g);
  of_tensor_release(x);
  of_tensor_release(y);
  of_tensor_release(xv);
}

/*===--- free tensor queries ---------------------------------------------------------------===*/

static void test_free_tensor_queries(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "frees", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(2), &x));
  of_tensor_t* c = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  of_tensor_t* y1 = NULL;
  of_tensor_t* y2 = NULL;
  of_tensor_t* y3 = NULL;
  ASSERT_OK(of_add(s, x, c, &y1));
  assert_int_equal(free_count(g), 1); /* counted as soon as it is seen */
  ASSERT_OK(of_mul(s, y1, c, &y2));   /* the same tensor again: still one variable */
  assert_int_equal(free_count(g), 1);
  ASSERT_OK(of_sub_scalar(s, y2, 1, &y3));
  assert_int_equal(free_count(g), 2);
  ASSERT_OK(of_graph_add_output(g, y3));
  ASSERT_OK(of_graph_end_build(g));

  const char* name = SENTINEL_PTR(const char*);
  ASSERT_STATUS(of_graph_free_tensor_name(g, 2, &name), OF_STATUS_OUT_OF_RANGE, "of_graph_free_tensor_name", "2");
  ASSERT_STATUS(of_graph_free_tensor_name(g, SIZE_MAX, &name), OF_STATUS_OUT_OF_RANGE, "of_graph_free_tensor_name");
  ASSERT_STATUS(of_graph_free_tensor_name(g, 0, NULL), OF_STATUS_INVALID_ARGUMENT, "out_name");
  ASSERT_STATUS(of_graph_free_tensor_count(g, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_free_tensor_count",
                "out_count");
  ASSERT_STATUS(of_graph_input_count(g, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_input_count", "out_count");
  ASSERT_STATUS(of_graph_output_count(g, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_output_count", "out_count");
  assert_ptr_equal(name, SENTINEL_PTR(const char*));
  ASSERT_OK(of_graph_free_tensor_name(g, 1, &name));
  assert_string_equal(name, "free_1");

  of_tensor_t* xv = make_tensor(s, F32, DIMS(2), VALS(3, 4));
  of_tensor_t* r = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv}, 1, &r, 1));
  EXPECT_TENSOR(r, F32, DIMS(2), VALS((3 + 1) * 1 - 1, (4 + 2) * 2 - 1), 0);
  of_tensor_release(r);

  /* Free tensors are bound to their memory, not copied: an in-place change of c shows in the next run. */
  ASSERT_OK(of_init_constant(s, c, 10));
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv}, 1, &r, 1));
  EXPECT_TENSOR(r, F32, DIMS(2), VALS((3 + 10) * 10 - 1, (4 + 10) * 10 - 1), 0);
  of_tensor_release(r);

  of_graph_destroy(g);
  of_tensor_t* tensors[] = {x, c, y1, y2, y3, xv};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
}

/*===--- options and memory statistics -----------------------------------------------------===*/

/* out = sum(-exp(x) * x) over x (8) float64, under the given options; returns the graph (run once). */
static of_graph_t* run_chain(of_session_t* s, int32_t fuse, int32_t inplace, int32_t plan_memory) {
  of_graph_options_t o;
  of_graph_options_init(&o);
  o.fuse = fuse;
  o.inplace = inplace;
  o.plan_memory = plan_memory;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "chain", &o, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F64, DIMS(8), &x));
  of_tensor_t* a = NULL;
  of_tensor_t* b = NULL;
  of_tensor_t* c = NULL;
  of_tensor_t* d = NULL;
  ASSERT_OK(of_exp(s, x, &a));
  ASSERT_OK(of_neg(s, a, &b));
  ASSERT_OK(of_mul(s, b, x, &c));
  ASSERT_OK(of_sum(s, c, NULL, 0, 0, &d));
  ASSERT_OK(of_graph_add_output(g, d));
  ASSERT_OK(of_graph_end_build(g));

  /* All zero before the first run. */
  of_graph_memory_stats_t st = stats_of(g);
  assert_true(st.planned_peak_bytes == 0 && st.intermediate_bytes == 0 && st.buffer_count == 0 &&
              st.inplace_count == 0 && st.node_count == 0 && st.specialization_count == 0);

  double xs[8];
  double expect = 0;
  for (int i = 0; i < 8; ++i) {
    xs[i] = 0.25 * i - 1;
    expect -= exp(xs[i]) * xs[i];
  }
  of_tensor_t* xv = NULL;
  ASSERT_OK(of_tensor_from_data(s, F64, DIMS(8), xs, sizeof xs, NULL, &xv));
  of_tensor_t* r = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv}, 1, &r, 1));
  EXPECT_TENSOR(r, F64, DIMS0, &expect, 1, 1e-14);
  of_tensor_release(r);
  of_tensor_t* tensors[] = {x, a, b, c, d, xv};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
  return g;
}

static void test_options_and_memory_stats(void** state) {
  of_session_t* s = *state;
  /* No fusion: exp, neg, mul, sum; a, b, c (64 bytes each) in the arena; neg writes into a's buffer and
   * mul into b's (each dies there; x is an input, not in the arena), so one 64-byte buffer holds all
   * three. */
  of_graph_t* g = run_chain(s, 0, 1, 1);
  of_graph_memory_stats_t st = stats_of(g);
  assert_int_equal(st.node_count, 4);
  assert_int_equal(st.buffer_count, 3);
  assert_int_equal(st.inplace_count, 2);
  assert_int_equal(st.intermediate_bytes, 3 * 64);
  assert_int_equal(st.planned_peak_bytes, 64);
  assert_int_equal(st.specialization_count, 1);
  of_graph_destroy(g);

  /* Without in place: a and b live together (neg reads a, writes b), then b and c; a's buffer is free
   * again for c: two buffers' worth. */
  g = run_chain(s, 0, 0, 1);
  st = stats_of(g);
  assert_int_equal(st.node_count, 4);
  assert_int_equal(st.inplace_count, 0);
  assert_int_equal(st.intermediate_bytes, 3 * 64);
  assert_int_equal(st.planned_peak_bytes, 2 * 64);
  of_graph_destroy(g);

  /* Without planning: a buffer each (and so no in place either). */
  g = run_chain(s, 0, 1, 0);
  st = stats_of(g);
  assert_int_equal(st.inplace_count, 0);
  assert_int_equal(st.planned_peak_bytes, 3 * 64);
  assert_int_equal(st.intermediate_bytes, 3 * 64);
  of_graph_destroy(g);

  /* With fusion (the default): exp, neg and mul (a tree whose inner values have one reader each) are
   * one step, before the sum; only c is left in the arena. */
  g = run_chain(s, 1, 1, 1);
  st = stats_of(g);
  assert_int_equal(st.node_count, 2);
  assert_int_equal(st.buffer_count, 1);
  assert_int_equal(st.inplace_count, 0);
  assert_int_equal(st.intermediate_bytes, 64);
  assert_int_equal(st.planned_peak_bytes, 64);
  expect_dump_contains(g, "<- exp+neg+mul");

  /* A caller's smaller struct: only its struct_size bytes are written. */
  of_graph_memory_stats_t part;
  memset(&part, 0xab, sizeof part);
  part.struct_size = offsetof(of_graph_memory_stats_t, buffer_count);
  ASSERT_OK(of_graph_memory_stats(g, &part));
  assert_int_equal(part.struct_size, offsetof(of_graph_memory_stats_t, buffer_count));
  assert_true(part.planned_peak_bytes == st.planned_peak_bytes);
  assert_true(part.intermediate_bytes == st.intermediate_bytes);
  assert_true(part.buffer_count == 0xababababababababULL);
  assert_true(part.specialization_count == 0xababababababababULL);

  /* struct_size 0 (or anything below sizeof(size_t)) and NULL. */
  memset(&part, 0xab, sizeof part);
  part.struct_size = 0;
  ASSERT_STATUS(of_graph_memory_stats(g, &part), OF_STATUS_INVALID_ARGUMENT, "of_graph_memory_stats", "struct_size");
  assert_int_equal(part.struct_size, 0);
  assert_true(part.planned_peak_bytes == 0xababababababababULL);
  part.struct_size = sizeof(size_t) - 1;
  ASSERT_STATUS(of_graph_memory_stats(g, &part), OF_STATUS_INVALID_ARGUMENT, "struct_size");
  ASSERT_STATUS(of_graph_memory_stats(g, NULL), OF_STATUS_INVALID_ARGUMENT, "of_graph_memory_stats", "out_stats");
  of_graph_destroy(g);
}

/*===--- the plan cache --------------------------------------------------------------------===*/

/* The process's resident memory in bytes (Linux), or 0 where it cannot be read. */
static size_t resident_bytes(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  unsigned long pages = 0, resident = 0;
  const int got = fscanf(f, "%lu %lu", &pages, &resident);
  fclose(f);
  return got == 2 ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

/* A graph y = sum(relu(x * 2) + 1, dim 1) over x (?, 64), options' cache size `capacity`. */
static of_graph_t* batch_graph(of_session_t* s, int32_t capacity) {
  of_graph_options_t o;
  of_graph_options_init(&o);
  o.plan_cache_size = capacity;
  o.fuse = 0; /* keep several intermediates in the arena */
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "batches", &o, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t *x = NULL, *a = NULL, *b = NULL, *c = NULL, *y = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(OF_DIM_UNKNOWN, 64), &x));
  ASSERT_OK(of_mul_scalar(s, x, 2, &a));
  ASSERT_OK(of_relu(s, a, &b));
  ASSERT_OK(of_add_scalar(s, b, 1, &c));
  ASSERT_OK(of_sum(s, c, DIMS(1), 0, &y));
  ASSERT_OK(of_graph_add_output(g, y));
  ASSERT_OK(of_graph_end_build(g));
  of_tensor_t* tensors[] = {x, a, b, c, y};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
  return g;
}

/* Runs g on a batch of n rows of ones and checks every output (relu(2) + 1 = 3, times 64). */
static void run_batch(of_session_t* s, of_graph_t* g, int64_t n) {
  of_tensor_t* x = NULL;
  ASSERT_OK(of_tensor_ones(s, F32, DIMS(n, 64), NULL, &x));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){x}, 1, &y, 1));
  float* out = malloc((size_t)n * sizeof(float));
  assert_non_null(out);
  ASSERT_OK(of_tensor_copy_to_host(y, out, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) assert_true(out[i] == 192.0f);
  free(out);
  of_tensor_release(x);
  of_tensor_release(y);
}

/* The numbers after each `needle` in text (e.g. each step's "(1.234 ms)"), added up; their number in *count. */
static double sum_after(const char* text, const char* needle, size_t* count) {
  double sum = 0;
  *count = 0;
  for (const char* p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) {
    sum += strtod(p + strlen(needle), NULL);
    ++*count;
  }
  return sum;
}

/* options.profile: each step's time per run in the dump, and each op's steps together. */
static void test_profile(void** state) {
  of_session_t* s = *state;
  of_graph_options_t o;
  of_graph_options_init(&o);
  o.fuse = 0;
  o.profile = 1;
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "profiled", &o, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  of_tensor_t* w = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F32, DIMS(OF_DIM_UNKNOWN, 64), &x));
  ASSERT_OK(of_graph_add_input(g, "w", F32, DIMS(64, 64), &w));
  of_tensor_t* a = NULL;
  of_tensor_t* b = NULL;
  of_tensor_t* c = NULL;
  ASSERT_OK(of_matmul(s, x, w, &a));
  ASSERT_OK(of_exp(s, a, &b));
  ASSERT_OK(of_neg(s, b, &c));
  ASSERT_OK(of_graph_add_output(g, c));
  ASSERT_OK(of_graph_end_build(g));
  /* Three runs of one shape, one of another: each specialization counts its own runs. */
  of_tensor_t* x64 = NULL;
  of_tensor_t* x32 = NULL;
  ASSERT_OK(of_tensor_full(s, F32, DIMS(64, 64), 0.01, NULL, &x64));
  ASSERT_OK(of_tensor_full(s, F32, DIMS(32, 64), 0.01, NULL, &x32));
  of_tensor_t* r = NULL;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){x64, x64}, 2, &r, 1));
    of_tensor_release(r);
  }
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){x32, x64}, 2, &r, 1));
  of_tensor_release(r);
  char* text = dump_of(g);
  assert_int_equal(count_occurrences(text, "profile: 3 runs"), 1);
  assert_int_equal(count_occurrences(text, "profile: 1 runs"), 1);
  /* In the first plan: three steps with their times, which add up to the plan's total; one line per op. */
  const char* first = strstr(text, "specialization (x: (64, 64), w: (64, 64))");
  const char* second = strstr(text, "specialization (x: (32, 64), w: (64, 64))");
  assert_true(first != NULL && second != NULL && first < second);
  char* plan = strndup(first, (size_t)(second - first));
  size_t steps = 0;
  const double step_ms = sum_after(plan, "  (", &steps);
  if (steps != 3 || !(step_ms > 0)) print_error("%s\n", plan);
  assert_int_equal(steps, 3);
  size_t totals = 0;
  const double total_ms = sum_after(plan, "; in the steps ", &totals);
  assert_int_equal(totals, 1);
  assert_true(step_ms > 0);
  assert_true(fabs(total_ms - step_ms) <= 0.003);
  /* A whole run takes at least its steps' time, per run and at best. */
  const double run_ms = sum_after(plan, "profile: 3 runs, ", &totals);
  assert_int_equal(totals, 1);
  assert_true(run_ms >= total_ms - 0.003);
  size_t lines = 0;
  const double op_ms = sum_after(plan, " step, ", &lines);
  assert_int_equal(lines, 3);
  assert_true(fabs(op_ms - step_ms) <= 0.003);
  /* The shortest runs: each step's at most its mean, and the ops' lines add up to the plan's. */
  size_t bests = 0;
  const double best_ms = sum_after(plan, ", best ", &bests);
  assert_int_equal(bests, 3);
  assert_true(best_ms > 0 && best_ms <= step_ms + 0.003);
  const double op_best_ms = sum_after(plan, "%), ", &lines);
  assert_int_equal(lines, 3);
  assert_true(fabs(op_best_ms - best_ms) <= 0.003);
  assert_true(fabs(sum_after(plan, " ms per run, ", &totals) - best_ms) <= 0.003);
  assert_int_equal(totals, 1);
  assert_true(sum_after(plan, " ms per run (best ", &totals) >= best_ms - 0.003);
  assert_int_equal(totals, 1);
  assert_true(strstr(plan, "    matmul: 1 step, ") != NULL);
  assert_true(strstr(plan, "    exp: 1 step, ") != NULL);
  assert_true(strstr(plan, "    neg: 1 step, ") != NULL);
  free(plan);
  free(text);
  of_graph_destroy(g);

  /* Off by default: no times. */
  o.profile = 0;
  ASSERT_OK(of_graph_create(s, "unprofiled", &o, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* y = NULL;
  of_tensor_t* z = NULL;
  ASSERT_OK(of_graph_add_input(g, "y", F32, DIMS(64, 64), &y));
  ASSERT_OK(of_exp(s, y, &z));
  ASSERT_OK(of_graph_add_output(g, z));
  ASSERT_OK(of_graph_end_build(g));
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){x64}, 1, &r, 1));
  of_tensor_release(r);
  text = dump_of(g);
  assert_null(strstr(text, "profile:"));
  assert_null(strstr(text, " ms"));
  free(text);
  of_graph_destroy(g);
  of_tensor_t* tensors[] = {x, w, a, b, c, x64, x32, y, z};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
}

static void test_plan_cache_evicts_least_recently_used(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = batch_graph(s, 3);
  /* Batches 1, 2, 3 fill the cache; 1 is run again, so 2 is the least recently used when 4 comes. */
  for (int64_t n = 1; n <= 3; ++n) run_batch(s, g, n);
  run_batch(s, g, 1);
  of_graph_memory_stats_t st = stats_of(g);
  assert_int_equal(st.specialization_count, 3);
  assert_int_equal(st.compile_count, 3);
  run_batch(s, g, 4);
  st = stats_of(g);
  assert_int_equal(st.specialization_count, 3);
  assert_int_equal(st.compile_count, 4);
  /* 1, 3 and 4 are cached (no compile); 2 was evicted (compiled again, evicting 3). */
  run_batch(s, g, 1);
  run_batch(s, g, 4);
  assert_int_equal(stats_of(g).compile_count, 4);
  run_batch(s, g, 2);
  assert_int_equal(stats_of(g).compile_count, 5);
  run_batch(s, g, 3);
  assert_int_equal(stats_of(g).compile_count, 6);
  /* The dump lists the cached plans only. */
  char* text = dump_of(g);
  assert_int_equal(count_occurrences(text, "x: (1, 64)"), 0);
  assert_int_equal(count_occurrences(text, "x: (2, 64)"), 1);
  assert_int_equal(count_occurrences(text, "x: (3, 64)"), 1);
  assert_int_equal(count_occurrences(text, "x: (4, 64)"), 1);
  free(text);
  /* The cached arenas: three plans of 3 intermediates (n, 64) floats each, planned into 2 buffers
   * at most. */
  st = stats_of(g);
  assert_true(st.cached_plan_bytes > 0);
  assert_true(st.cached_plan_bytes <= (2 + 3 + 4) * 64 * 4 * 3);
  of_graph_destroy(g);

  /* plan_cache_size must be at least 1. */
  of_graph_options_t o;
  of_graph_options_init(&o);
  o.plan_cache_size = 0;
  of_graph_t* bad = GRAPH_SENTINEL;
  ASSERT_STATUS(of_graph_create(s, "bad", &o, &bad), OF_STATUS_INVALID_ARGUMENT, "of_graph_create",
                "plan_cache_size");
  assert_ptr_equal(bad, GRAPH_SENTINEL);
}

/* Many distinct batch sizes through one graph: the cache stays at its bound and so does memory.
 * Without eviction the 600 plans below would hold about 140 MB of arenas. */
static void test_plan_cache_memory_stays_flat(void** state) {
  of_session_t* s = *state;
  of_graph_t* g = batch_graph(s, 8);
  size_t max_cached = 0;
  for (int64_t n = 1; n <= 100; ++n) run_batch(s, g, 300 + n);
  const size_t warm = resident_bytes();
  for (int64_t n = 101; n <= 600; ++n) {
    run_batch(s, g, 300 + n);
    const of_graph_memory_stats_t st = stats_of(g);
    assert_true(st.specialization_count <= 8);
    if (st.cached_plan_bytes > max_cached) max_cached = (size_t)st.cached_plan_bytes;
  }
  const size_t after = resident_bytes();
  /* The sanitizers' quarantine and shadow memory grow with each new allocation: RSS is not the
   * program's there, so only the cache's own accounting is checked under them. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  if (warm > 0 && after > warm) {
    const size_t growth = after - warm;
    if (growth > 16u << 20) {
      print_error("resident memory grew by %zu bytes over 500 shapes\n", growth);
      fail();
    }
  }
#else
  (void)warm;
  (void)after;
#endif
  const of_graph_memory_stats_t st = stats_of(g);
  assert_int_equal(st.compile_count, 600);
  assert_int_equal(st.specialization_count, 8);
  assert_true(max_cached <= 8 * (size_t)900 * 64 * 4 * 3);
  of_graph_destroy(g);
}

/*===--- optimizers in graphs --------------------------------------------------------------===*/

static void test_optimizer_without_gradients(void** state) {
  of_session_t* s = *state;
  of_tensor_t* w = make_tensor(s, F64, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &w, 1, NULL, &opt));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "nograd", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F64, DIMS(4, 3), &x));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_linear(s, x, w, NULL, &y));
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  /* No backward was traced: no parameter has a gradient. */
  ASSERT_STATUS(of_graph_add_optimizer(g, opt), OF_STATUS_FAILED_PRECONDITION, "of_graph_add_optimizer", "gradient");
  ASSERT_OK(of_graph_add_output(g, loss));
  ASSERT_OK(of_graph_end_build(g));
  /* The graph still runs its forward and leaves w alone. */
  of_tensor_t* xv = make_tensor(s, F64, DIMS(4, 3), VALS(1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1));
  of_tensor_t* r = NULL;
  ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv}, 1, &r, 1));
  EXPECT_TENSOR(r, F64, DIMS0, VALS(6 + 15 + 6 + 15), 0);
  of_tensor_release(r);
  EXPECT_TENSOR(w, F64, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6), 0);
  of_graph_destroy(g);
  of_optimizer_destroy(opt);
  of_tensor_t* tensors[] = {w, x, y, loss, xv};
  for (size_t i = 0; i < OF_ARRAY_SIZE(tensors); ++i) of_tensor_release(tensors[i]);
}

/* Deterministic data: inputs, targets and initial weights from fixed formulas. */
enum { kBatch = 6, kIn = 5, kOut = 3, kSteps = 5 };

static of_tensor_t* train_input(of_session_t* s, int step) {
  double v[kBatch * kIn];
  for (int i = 0; i < kBatch * kIn; ++i) v[i] = sin(0.7 * i + 1.3 * step) + 0.1 * step;
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, F64, DIMS(kBatch, kIn), v, sizeof v, NULL, &t));
  return t;
}

static of_tensor_t* train_target(of_session_t* s, int step) {
  int64_t v[kBatch];
  for (int i = 0; i < kBatch; ++i) v[i] = (i + step) % kOut;
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, I64, DIMS(kBatch), v, sizeof v, NULL, &t));
  return t;
}

static void initial_weights(double* w, double* b) {
  for (int i = 0; i < kOut * kIn; ++i) w[i] = 0.3 * cos(1.1 * i);
  for (int i = 0; i < kOut; ++i) b[i] = 0.05 * (i - 1);
}

static of_tensor_t* param(of_session_t* s, const double* v, const int64_t* dims, size_t ndim, size_t n) {
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, F64, dims, ndim, v, n * sizeof(double), NULL, &t));
  ASSERT_OK(of_tensor_set_requires_grad(t, 1));
  return t;
}

/* The mean cross-entropy of x @ w^T + b against the targets, as a float64 reference loop. */
static double reference_loss(of_session_t* s, int step, const double* w, const double* b) {
  double x[kBatch * kIn];
  for (int i = 0; i < kBatch * kIn; ++i) x[i] = sin(0.7 * i + 1.3 * step) + 0.1 * step;
  double total = 0;
  for (int n = 0; n < kBatch; ++n) {
    double logits[kOut];
    double m = -INFINITY;
    for (int o = 0; o < kOut; ++o) {
      logits[o] = b[o];
      for (int k = 0; k < kIn; ++k) logits[o] += x[n * kIn + k] * w[o * kIn + k];
      m = logits[o] > m ? logits[o] : m;
    }
    double z = 0;
    for (int o = 0; o < kOut; ++o) z += exp(logits[o] - m);
    total += -(logits[(n + step) % kOut] - m - log(z));
  }
  (void)s;
  return total / kBatch;
}

static void test_training_graph_equals_eager(void** state) {
  of_session_t* s = *state;
  double w0[kOut * kIn], b0[kOut];
  initial_weights(w0, b0);
  of_sgd_options_t sgd;
  of_sgd_options_init(&sgd);
  sgd.lr = 0.2;
  sgd.momentum = 0.9;
  sgd.weight_decay = 0.01;

  /* Eager: zero_grad, forward, backward, step; the lr changes before step 3. */
  of_tensor_t* we = param(s, w0, DIMS(kOut, kIn), kOut * kIn);
  of_tensor_t* be = param(s, b0, DIMS(kOut), kOut);
  of_optimizer_t* eager_opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, (of_tensor_t* const[]){we, be}, 2, &sgd, &eager_opt));
  double eager_losses[kSteps];
  for (int i = 0; i < kSteps; ++i) {
    if (i == 3) ASSERT_OK(of_optimizer_set_lr(eager_opt, 0.05));
    of_tensor_t* x = train_input(s, i);
    of_tensor_t* y = train_target(s, i);
    of_tensor_t* logits = NULL;
    of_tensor_t* loss = NULL;
    ASSERT_OK(of_linear(s, x, we, be, &logits));
    ASSERT_OK(of_cross_entropy(s, logits, y, NULL, &loss));
    eager_losses[i] = of_test_item(loss);
    ASSERT_OK(of_optimizer_zero_grad(eager_opt));
    ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
    ASSERT_OK(of_optimizer_step(s, eager_opt));
    of_tensor_t* tensors[] = {x, y, logits, loss};
    for (size_t k = 0; k < OF_ARRAY_SIZE(tensors); ++k) of_tensor_release(tensors[k]);
  }
  /* The first loss against the reference loop (both paths start from the same weights). */
  assert_true(fabs(eager_losses[0] - reference_loss(s, 0, w0, b0)) < 1e-12);

  /* Lazy: one graph, one run per step. w is registered by name; b is a requires_grad leaf. */
  of_tensor_t* wl = param(s, w0, DIMS(kOut, kIn), kOut * kIn);
  of_tensor_t* bl = param(s, b0, DIMS(kOut), kOut);
  of_optimizer_t* lazy_opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, (of_tensor_t* const[]){wl, bl}, 2, &sgd, &lazy_opt));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "train", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* x = NULL;
  of_tensor_t* y = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", F64, DIMS(OF_DIM_UNKNOWN, kIn), &x));
  ASSERT_OK(of_graph_add_input(g, "y", I64, DIMS(OF_DIM_UNKNOWN), &y));
  ASSERT_OK(of_graph_add_parameter(g, wl, "weight"));
  of_tensor_t* logits = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_linear(s, x, wl, bl, &logits));
  ASSERT_OK(of_cross_entropy(s, logits, y, NULL, &loss));
  assert_int_equal(is_lazy(loss), 1);
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  of_tensor_t* grad = OUT_SENTINEL;
  ASSERT_OK(of_tensor_grad(wl, &grad));
  assert_null(grad); /* lazy gradients stay in the graph */
  ASSERT_OK(of_graph_add_optimizer(g, lazy_opt));
  ASSERT_STATUS(of_graph_add_optimizer(g, lazy_opt), OF_STATUS_INVALID_ARGUMENT, "already attached");
  ASSERT_OK(of_graph_add_output(g, loss));
  ASSERT_OK(of_graph_end_build(g));

  char* text = dump_of(g);
  assert_int_equal(count_occurrences(text, " trainable\n"), 2);
  assert_non_null(strstr(text, " weight: float64 (3, 5) trainable\n"));
  assert_non_null(strstr(text, " param_1: float64 (3,) trainable\n"));
  assert_int_equal(count_occurrences(text, "sgd_update("), 2);
  free(text);

  for (int i = 0; i < kSteps; ++i) {
    if (i == 3) ASSERT_OK(of_optimizer_set_lr(lazy_opt, 0.05));
    if (i == 4) {
      of_optimizer_destroy(lazy_opt); /* the graph keeps it alive */
      lazy_opt = NULL;
    }
    of_tensor_t* xv = train_input(s, i);
    of_tensor_t* yv = train_target(s, i);
    of_tensor_t* lv = NULL;
    ASSERT_OK(of_graph_run(g, (const of_tensor_t* const[]){xv, yv}, 2, &lv, 1));
    const double l = of_test_item(lv);
    if (fabs(l - eager_losses[i]) > 1e-10) fail_msg("step %d: graph loss %.17g, eager %.17g", i, l, eager_losses[i]);
    of_tensor_release(lv);
    of_tensor_release(xv);
    of_tensor_release(yv);
  }
  /* The eager parameter tensors were updated in place, to the eager path's values; no .grad set. */
  size_t n = 0;
  double* wev = of_test_values(we, &n);
  EXPECT_TENSOR(wl, F64, DIMS(kOut, kIn), wev, n, 1e-10);
  free(wev);
  double* bev = of_test_values(be, &n);
  EXPECT_TENSOR(bl, F64, DIMS(kOut), bev, n, 1e-10);
  free(bev);
  ASSERT_OK(of_tensor_grad(bl, &grad));
  assert_null(grad);
  /* And they moved: the training did something. */
  double* wlv = of_test_values(wl, &n);
  double moved = 0;
  for (size_t k = 0; k < n; ++k) moved += fabs(wlv[k] - w0[k]);
  free(wlv);
  assert_true(moved > 1e-3);

  of_graph_destroy(g);
  of_optimizer_destroy(eager_opt);
  of_tensor_t* tensors[] = {we, be, wl, bl, x, y, logits, loss};
  for (size_t k = 0; k < OF_ARRAY_SIZE(tensors); ++k) of_tensor_release(tensors[k]);
}

int main(void) {
#define WITH_SESSION(test) cmocka_unit_test_setup_teardown(test, of_test_setup_session, of_test_teardown_session)
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init),
      WITH_SESSION(test_create_and_destroy),
      WITH_SESSION(test_create_errors),
      WITH_SESSION(test_null_graph),
      WITH_SESSION(test_seed_free_tensors),
      WITH_SESSION(test_build_state_errors),
      WITH_SESSION(test_add_parameter_non_leaf),
      WITH_SESSION(test_add_parameter_makes_trainable),
      WITH_SESSION(test_add_input_symbol_of_another_session),
      WITH_SESSION(test_failed_add_input_records_nothing),
      WITH_SESSION(test_destroy_during_build),
      WITH_SESSION(test_run_checks_inputs),
      WITH_SESSION(test_lazy_tensor_misuse),
      WITH_SESSION(test_threads),
      WITH_SESSION(test_dump_buffer),
      WITH_SESSION(test_free_tensor_queries),
      WITH_SESSION(test_options_and_memory_stats),
      WITH_SESSION(test_profile),
      WITH_SESSION(test_plan_cache_evicts_least_recently_used),
      WITH_SESSION(test_plan_cache_memory_stays_flat),
      WITH_SESSION(test_optimizer_without_gradients),
      WITH_SESSION(test_training_graph_equals_eager),
  };
#undef WITH_SESSION
  return cmocka_run_group_tests(tests, NULL, NULL);
}
