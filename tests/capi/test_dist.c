/* Process groups, collectives and data-parallel graphs through the C ABI, in one process (a group of
 * world size 1): argument checks, what each collective returns there, a training graph made data-parallel,
 * and destroy orders. Groups of several processes are tested in tests/dist/. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, strdup (the tests build as strict C11) */
#include <stdlib.h>
#include <string.h>

#include "capi_test_util.h"

/* A fresh rendezvous directory (the caller removes it with rmdir_all). */
static char* fresh_dir(void) {
  char* dir = strdup("/tmp/of_capi_dist_XXXXXX");
  assert_non_null(mkdtemp(dir));
  return dir;
}
static void rmdir_all(char* dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  free(dir);
}

static of_process_group_t* one_rank_group(const char* dir) {
  of_process_group_options_t o;
  of_process_group_options_init(&o);
  o.rendezvous = dir;
  of_process_group_t* g = NULL;
  ASSERT_OK(of_process_group_create(&o, &g));
  return g;
}

static void test_options_and_queries(void** state) {
  (void)state;
  of_process_group_options_t o;
  of_process_group_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.rank, 0);
  assert_int_equal(o.world_size, 1);
  assert_int_equal(o.timeout_ms, 30000);
  assert_null(o.rendezvous);
  of_process_group_options_init(NULL);

  char* dir = fresh_dir();
  of_process_group_t* out = SENTINEL_PTR(of_process_group_t*);
  ASSERT_STATUS(of_process_group_create(NULL, &out), OF_STATUS_INVALID_ARGUMENT, "of_process_group_create", "options");
  ASSERT_STATUS(of_process_group_create(&o, &out), OF_STATUS_INVALID_ARGUMENT, "options->rendezvous", "NULL");
  o.rendezvous = dir;
  o.rank = 1;
  ASSERT_STATUS(of_process_group_create(&o, &out), OF_STATUS_INVALID_ARGUMENT, "rank must be in [0, world_size = 1)");
  o.rank = 0;
  o.timeout_ms = 0;
  ASSERT_STATUS(of_process_group_create(&o, &out), OF_STATUS_INVALID_ARGUMENT, "timeout_ms must be > 0");
  o.timeout_ms = 1000;
  o.rendezvous = "/nonexistent/of_rendezvous";
  ASSERT_STATUS(of_process_group_create(&o, &out), OF_STATUS_INVALID_ARGUMENT, "not a writable directory");
  assert_ptr_equal(out, SENTINEL_PTR(of_process_group_t*)); /* failed calls leave outputs alone */

  of_process_group_t* g = one_rank_group(dir);
  int32_t rank = -1, world = -1;
  ASSERT_OK(of_process_group_rank(g, &rank));
  ASSERT_OK(of_process_group_world_size(g, &world));
  assert_int_equal(rank, 0);
  assert_int_equal(world, 1);
  ASSERT_OK(of_process_group_barrier(g));
  ASSERT_STATUS(of_process_group_rank(NULL, &rank), OF_STATUS_INVALID_ARGUMENT, "group");
  ASSERT_STATUS(of_process_group_rank(g, NULL), OF_STATUS_INVALID_ARGUMENT, "out_rank");
  of_process_group_destroy(g);
  of_process_group_destroy(NULL);
  rmdir_all(dir);
}

static void test_collectives(void** state) {
  (void)state;
  char* dir = fresh_dir();
  of_process_group_t* g = one_rank_group(dir);
  of_session_t* s = of_test_session();
  const float values[6] = {1, -2, 3.5f, 0, 5, -6};
  const int64_t dims[2] = {2, 3};
  of_tensor_t* x = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_float32(), dims, 2, values, sizeof values, NULL, &x));
  for (of_reduce_op_t op = OF_REDUCE_SUM; op <= OF_REDUCE_MIN; ++op) {
    of_tensor_t* y = NULL;
    ASSERT_OK(of_all_reduce(s, g, x, op, &y));
    float got[6];
    ASSERT_OK(of_tensor_copy_to_host(y, got, sizeof got));
    assert_memory_equal(got, values, sizeof got);
    of_tensor_release(y);
  }
  of_tensor_t* y = NULL;
  ASSERT_OK(of_broadcast(s, g, x, 0, &y));
  of_tensor_release(y);
  ASSERT_OK(of_all_gather(s, g, x, &y));
  int64_t got_dims[3] = {0};
  ASSERT_OK(of_tensor_dims(y, got_dims, 3));
  assert_int_equal(got_dims[0], 1);
  assert_int_equal(got_dims[1], 2);
  assert_int_equal(got_dims[2], 3);
  of_tensor_release(y);

  of_tensor_t* out = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_all_reduce(s, g, x, 4, &out), OF_STATUS_INVALID_ARGUMENT, "of_all_reduce", "OF_REDUCE_");
  ASSERT_STATUS(of_all_reduce(s, NULL, x, OF_REDUCE_SUM, &out), OF_STATUS_INVALID_ARGUMENT, "group");
  ASSERT_STATUS(of_broadcast(s, g, x, 1, &out), OF_STATUS_INVALID_ARGUMENT, "of_broadcast", "root");
  of_tensor_t* ints = NULL;
  const int32_t iv[2] = {1, 2};
  const int64_t two = 2;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_int32(), &two, 1, iv, sizeof iv, NULL, &ints));
  ASSERT_STATUS(of_all_reduce(s, g, ints, OF_REDUCE_MEAN, &out), OF_STATUS_INVALID_ARGUMENT, "mean", "int32");
  assert_ptr_equal(out, SENTINEL_PTR(of_tensor_t*));
  of_tensor_release(ints);
  of_tensor_release(x);
  of_process_group_destroy(g);
  of_session_destroy(s);
  rmdir_all(dir);
}

/* A linear model's training step, data-parallel over a one-rank group: the loss falls, and the graph
 * keeps its group alive after the group's handle is destroyed. */
static void test_data_parallel_graph(void** state) {
  (void)state;
  char* dir = fresh_dir();
  of_process_group_t* g = one_rank_group(dir);
  of_session_t* s = of_test_session();
  const int64_t wdims[2] = {2, 4};
  of_tensor_t* w = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float64(), wdims, 2, NULL, &w));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  of_sgd_options_t so;
  of_sgd_options_init(&so);
  so.lr = 0.5;
  of_optimizer_t* opt = NULL;
  ASSERT_OK(of_optimizer_sgd_create(s, &w, 1, &so, &opt));

  of_graph_t* graph = NULL;
  ASSERT_OK(of_graph_create(s, "dp", NULL, &graph));
  of_data_parallel_options_t dp;
  of_data_parallel_options_init(&dp);
  assert_int_equal(dp.bucket_bytes, 25 << 20);
  assert_int_equal(dp.sync_batch_norm_stats, 0);
  dp.bucket_bytes = 0;
  ASSERT_STATUS(of_graph_set_data_parallel(graph, g, &dp), OF_STATUS_INVALID_ARGUMENT, "bucket_bytes");
  ASSERT_STATUS(of_graph_set_data_parallel(graph, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "group");
  ASSERT_OK(of_graph_set_data_parallel(graph, g, NULL));
  ASSERT_OK(of_graph_begin_build(graph));
  const int64_t xdims[2] = {OF_DIM_UNKNOWN, 4}, ldims[1] = {OF_DIM_UNKNOWN};
  of_tensor_t *x = NULL, *labels = NULL, *logits = NULL, *loss = NULL;
  ASSERT_OK(of_graph_add_input(graph, "x", of_dtype_float64(), xdims, 2, &x));
  ASSERT_OK(of_graph_add_input(graph, "labels", of_dtype_int64(), ldims, 1, &labels));
  ASSERT_OK(of_linear(s, x, w, NULL, &logits));
  ASSERT_OK(of_cross_entropy(s, logits, labels, NULL, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  ASSERT_OK(of_graph_add_optimizer(graph, opt));
  ASSERT_OK(of_graph_add_output(graph, loss));
  ASSERT_OK(of_graph_end_build(graph));
  of_process_group_destroy(g); /* the graph keeps it */

  const double xv[8] = {1, 0, 0, 0, 0, 1, 0, 0};
  const int64_t lv[2] = {0, 1}, bdims[2] = {2, 4};
  of_tensor_t *bx = NULL, *bl = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_float64(), bdims, 2, xv, sizeof xv, NULL, &bx));
  ASSERT_OK(of_tensor_from_data(s, of_dtype_int64(), bdims, 1, lv, sizeof lv, NULL, &bl));
  double first = 0, last = 0;
  for (int step = 0; step < 5; ++step) {
    const of_tensor_t* inputs[2] = {bx, bl};
    of_tensor_t* out = NULL;
    ASSERT_OK(of_graph_run(graph, inputs, 2, &out, 1));
    ASSERT_OK(of_tensor_copy_to_host(out, step == 0 ? &first : &last, sizeof(double)));
    of_tensor_release(out);
  }
  assert_true(last < first);
  char* dir2 = fresh_dir();
  of_process_group_t* g2 = one_rank_group(dir2);
  ASSERT_STATUS(of_graph_set_data_parallel(graph, g2, NULL), OF_STATUS_FAILED_PRECONDITION, "already run");
  of_process_group_destroy(g2);
  rmdir_all(dir2);

  of_tensor_release(bx);
  of_tensor_release(bl);
  of_tensor_release(x);
  of_tensor_release(labels);
  of_tensor_release(logits);
  of_tensor_release(loss);
  of_graph_destroy(graph);
  of_optimizer_destroy(opt);
  of_tensor_release(w);
  of_session_destroy(s);
  rmdir_all(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_and_queries),
      cmocka_unit_test(test_collectives),
      cmocka_unit_test(test_data_parallel_graph),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
