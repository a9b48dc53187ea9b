/* CUDA tensors through the C ABI: creation on the GPU, copies back, and the same random stream as
 * the CPU for the same seed. Exits 77 (ctest: skipped) where this build or machine has no CUDA device,
 * saying why. */
#include "../capi/capi_test_util.h"

#define SKIP_RETURN_CODE 77

static of_session_t* cuda_session(void) {
  of_session_options_t options;
  of_session_options_init(&options);
  options.device_type = OF_DEVICE_CUDA;
  of_session_t* session = NULL;
  ASSERT_OK(of_session_create(&options, &session));
  return session;
}

static void test_from_data_round_trip(void** state) {
  (void)state;
  of_session_t* gpu = cuda_session();
  const int64_t dims[2] = {3, 5};
  float host[15], back[15];
  for (int i = 0; i < 15; ++i) host[i] = (float)i * 0.5f - 3.0f;
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(gpu, of_dtype_float32(), dims, 2, host, sizeof host, NULL, &t));
  int32_t type = 0, index = -1;
  ASSERT_OK(of_tensor_device(t, &type, &index));
  assert_int_equal(type, OF_DEVICE_CUDA);
  assert_int_equal(index, 0);
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_memory_equal(host, back, sizeof host);
  of_tensor_release(t);
  of_session_destroy(gpu);
}

static void test_full(void** state) {
  (void)state;
  of_session_t* gpu = cuda_session();
  const int64_t dims[2] = {3, 5};
  of_tensor_t* full = NULL;
  double d[15];
  ASSERT_OK(of_tensor_full(gpu, of_dtype_float64(), dims, 2, 2.25, NULL, &full));
  ASSERT_OK(of_tensor_copy_to_host(full, d, sizeof d));
  for (int i = 0; i < 15; ++i) assert_true(d[i] == 2.25);
  of_tensor_release(full);
  of_session_destroy(gpu);
}

/* The same seed gives the same numbers on either device (counter-based generator). */
static void test_randn_matches_cpu(void** state) {
  (void)state;
  of_session_t* gpu = cuda_session();
  of_session_t* cpu = of_test_session();
  const int64_t dims[2] = {3, 5};
  of_tensor_t *rg = NULL, *rc = NULL;
  ASSERT_OK(of_session_manual_seed(gpu, 7));
  ASSERT_OK(of_session_manual_seed(cpu, 7));
  ASSERT_OK(of_tensor_randn(gpu, of_dtype_float32(), dims, 2, NULL, &rg));
  ASSERT_OK(of_tensor_randn(cpu, of_dtype_float32(), dims, 2, NULL, &rc));
  of_test_assert_same_bytes(rg, rc);
  of_tensor_release(rg);
  of_tensor_release(rc);
  of_session_destroy(gpu);
  of_session_destroy(cpu);
}

/* A device index past the last one is UNAVAILABLE, not a crash. */
static void test_missing_device_index(void** state) {
  (void)state;
  of_session_t* gpu = cuda_session();
  const int64_t dims[2] = {3, 5};
  of_tensor_options_t options;
  of_tensor_options_init(&options);
  options.device_type = OF_DEVICE_CUDA;
  options.device_index = 4096;
  of_tensor_t* none = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_zeros(gpu, of_dtype_float32(), dims, 2, &options, &none), OF_STATUS_UNAVAILABLE,
                "of_tensor_zeros", "cuda:4096");
  assert_ptr_equal(none, SENTINEL_PTR(of_tensor_t*));
  of_session_destroy(gpu);
}

static of_device_memory_stats_t cuda_stats(void) {
  of_device_memory_stats_t stats;
  stats.struct_size = sizeof stats;
  ASSERT_OK(of_device_memory_stats(OF_DEVICE_CUDA, 0, &stats));
  return stats;
}

/* The caching allocator on a GPU: a loop of the same sizes takes memory from the device once; freed
 * memory stays reserved until of_device_empty_cache; a request larger than the GPU is
 * RESOURCE_EXHAUSTED, counted, and the device keeps working. */
static void test_caching_allocator(void** state) {
  (void)state;
  of_session_t* gpu = cuda_session();
  const int64_t dims[2] = {1024, 1024};
  const of_device_memory_stats_t start = cuda_stats();
  of_device_memory_stats_t after_first = start;
  for (int i = 0; i < 20; ++i) {
    of_tensor_t *a = NULL, *b = NULL;
    ASSERT_OK(of_tensor_zeros(gpu, of_dtype_float32(), dims, 2, NULL, &a));
    ASSERT_OK(of_tensor_ones(gpu, of_dtype_float32(), dims, 2, NULL, &b));
    of_tensor_release(a);
    of_tensor_release(b);
    if (i == 0) after_first = cuda_stats();
  }
  const of_device_memory_stats_t end = cuda_stats();
  assert_int_equal(end.device_allocations, after_first.device_allocations);
  assert_int_equal(end.allocations, start.allocations + 40);
  assert_int_equal(end.bytes_in_use, start.bytes_in_use);
  assert_true(end.bytes_cached >= 8u << 20);
  assert_true(end.peak_bytes_in_use >= start.bytes_in_use + (8u << 20));

  const int64_t huge[2] = {(int64_t)1 << 20, (int64_t)1 << 20}; /* 4 TiB of float32 */
  of_tensor_t* none = NULL;
  ASSERT_STATUS(of_tensor_empty(gpu, of_dtype_float32(), huge, 2, NULL, &none), OF_STATUS_RESOURCE_EXHAUSTED,
                "out of memory on cuda:0");
  const of_device_memory_stats_t failed = cuda_stats();
  assert_int_equal(failed.out_of_memory, end.out_of_memory + 1);
  /* Returning the cache to the device happened before failing. */
  assert_true(failed.bytes_reserved < end.bytes_reserved);
  of_tensor_t* ok = NULL;
  ASSERT_OK(of_tensor_ones(gpu, of_dtype_float32(), dims, 2, NULL, &ok));
  of_tensor_release(ok);
  ASSERT_OK(of_device_empty_cache(OF_DEVICE_CUDA, 0));
  assert_int_equal(cuda_stats().bytes_cached, 0);
  of_session_destroy(gpu);
}

/* Copies between the CPU and the GPU, and on the GPU, keep dtype, dims and values. */
static void test_copy_to_device(void** state) {
  (void)state;
  of_session_t* cpu = of_test_session();
  const int64_t dims[2] = {4, 3};
  double host[12], back[12];
  for (int i = 0; i < 12; ++i) host[i] = i * 1.5 - 4;
  of_tensor_t *x = NULL, *g = NULL, *g2 = NULL, *h = NULL;
  ASSERT_OK(of_tensor_from_data(cpu, of_dtype_float64(), dims, 2, host, sizeof host, NULL, &x));
  ASSERT_OK(of_tensor_copy_to_device(x, OF_DEVICE_CUDA, 0, &g));
  ASSERT_OK(of_tensor_copy_to_device(g, OF_DEVICE_CUDA, 0, &g2));
  ASSERT_OK(of_tensor_copy_to_device(g2, OF_DEVICE_CPU, 0, &h));
  int32_t type = 0, index = -1;
  ASSERT_OK(of_tensor_device(g2, &type, &index));
  assert_int_equal(type, OF_DEVICE_CUDA);
  ASSERT_OK(of_tensor_copy_to_host(h, back, sizeof back));
  assert_memory_equal(host, back, sizeof host);
  of_tensor_release(x);
  of_tensor_release(g);
  of_tensor_release(g2);
  of_tensor_release(h);
  of_session_destroy(cpu);
}

/* Ops on CUDA tensors through the C ABI: relu(a @ b + a @ b) computed on the GPU equals the CPU's; an op
 * without a CUDA kernel for a dtype is UNIMPLEMENTED naming the dtype and the device. */
static void test_ops_on_cuda(void** state) {
  (void)state;
  of_session_t* gpu = cuda_session();
  of_session_t* cpu = of_test_session();
  const int64_t da[2] = {3, 4}, db[2] = {4, 5};
  float a[12], b[20], want[15], got[15];
  for (int i = 0; i < 12; ++i) a[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
  for (int i = 0; i < 20; ++i) b[i] = (float)((i * 5) % 13) * 0.125f - 0.75f;
  of_session_t* sessions[2] = {cpu, gpu};
  for (int s = 0; s < 2; ++s) {
    of_tensor_t *ta = NULL, *tb = NULL, *p = NULL, *sum = NULL, *y = NULL;
    ASSERT_OK(of_tensor_from_data(sessions[s], of_dtype_float32(), da, 2, a, sizeof a, NULL, &ta));
    ASSERT_OK(of_tensor_from_data(sessions[s], of_dtype_float32(), db, 2, b, sizeof b, NULL, &tb));
    ASSERT_OK(of_matmul(sessions[s], ta, tb, &p));
    ASSERT_OK(of_add(sessions[s], p, p, &sum));
    ASSERT_OK(of_relu(sessions[s], sum, &y));
    int32_t type = 0, index = -1;
    ASSERT_OK(of_tensor_device(y, &type, &index));
    assert_int_equal(type, s == 0 ? OF_DEVICE_CPU : OF_DEVICE_CUDA);
    ASSERT_OK(of_tensor_copy_to_host(y, s == 0 ? want : got, sizeof want));
    of_tensor_release(ta);
    of_tensor_release(tb);
    of_tensor_release(p);
    of_tensor_release(sum);
    of_tensor_release(y);
  }
  for (int i = 0; i < 15; ++i) assert_true(fabsf(want[i] - got[i]) <= 1e-5f * (1.0f + fabsf(want[i])));
  const int64_t dn[1] = {3};
  of_tensor_t *ints = NULL, *none = SENTINEL_PTR(of_tensor_t*);
  ASSERT_OK(of_tensor_zeros(gpu, of_dtype_int64(), dn, 1, NULL, &ints));
  ASSERT_STATUS(of_relu(gpu, ints, &none), OF_STATUS_UNIMPLEMENTED, "relu", "int64", "cuda:0");
  assert_ptr_equal(none, SENTINEL_PTR(of_tensor_t*));
  of_tensor_release(ints);
  of_session_destroy(cpu);
  of_session_destroy(gpu);
}

int main(void) {
  of_status_t* st = of_test_cuda_probe();
  if (st != NULL) {
    const int unavailable = of_status_code(st) == OF_STATUS_UNAVAILABLE;
    printf("SKIPPED: %s\n", of_status_message(st));
    of_status_destroy(st);
    return unavailable ? SKIP_RETURN_CODE : 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_from_data_round_trip), cmocka_unit_test(test_full),
      cmocka_unit_test(test_randn_matches_cpu),    cmocka_unit_test(test_missing_device_index),
      cmocka_unit_test(test_caching_allocator),    cmocka_unit_test(test_copy_to_device),
      cmocka_unit_test(test_ops_on_cuda),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
