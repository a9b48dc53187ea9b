/* Dims (OF_DIM_UNKNOWN, named symbols) and sessions (options, creation, seeding, dim symbols). */
#include "capi_test_util.h"

/* The largest symbol encoding the library could ever hand out (symbol number 2^31 - 1); no test
 * creates that many symbols, so it is never a real symbol. */
#define UNCREATED_SYMBOL (OF_DIM_UNKNOWN + (((int64_t)1 << 31) - 1))

static void test_dim_unknown_constant(void** state) {
  (void)state;
  assert_true(OF_DIM_UNKNOWN == INT64_MIN);
  const int64_t u = OF_DIM_UNKNOWN;
  assert_true(u < 0);
  assert_true(u == (int64_t)0x8000000000000000ull);
}

static void test_dim_is_known(void** state) {
  (void)state;
  assert_int_equal(of_dim_is_known(0), 1);
  assert_int_equal(of_dim_is_known(1), 1);
  assert_int_equal(of_dim_is_known(224), 1);
  assert_int_equal(of_dim_is_known(INT64_MAX), 1);
  assert_int_equal(of_dim_is_known(OF_DIM_UNKNOWN), 0);
  assert_int_equal(of_dim_is_known(-1), 0);
  assert_int_equal(of_dim_is_known(-2), 0);
  assert_int_equal(of_dim_is_known(UNCREATED_SYMBOL), 0);
}

static void test_dim_is_symbol_on_non_symbols(void** state) {
  (void)state;
  assert_int_equal(of_dim_is_symbol(0), 0);
  assert_int_equal(of_dim_is_symbol(5), 0);
  assert_int_equal(of_dim_is_symbol(INT64_MAX), 0);
  assert_int_equal(of_dim_is_symbol(OF_DIM_UNKNOWN), 0);
  assert_int_equal(of_dim_is_symbol(-1), 0);
  assert_int_equal(of_dim_is_symbol(-12345), 0);
  assert_int_equal(of_dim_is_symbol(UNCREATED_SYMBOL), 0);
  assert_int_equal(of_dim_is_symbol(UNCREATED_SYMBOL + 1), 0);
}

static void test_session_options_init(void** state) {
  (void)state;
  of_session_options_t o;
  memset(&o, 0xab, sizeof o);
  of_session_options_init(&o);
  assert_int_equal(o.struct_size, sizeof(of_session_options_t));
  assert_int_equal(o.seed, 0x5eed);
  assert_int_equal(o.num_threads, 0);
  assert_int_equal(o.device_type, OF_DEVICE_CPU);
  assert_int_equal(o.device_index, 0);
  of_session_options_init(NULL); /* ignored */

  of_tensor_options_t t;
  memset(&t, 0xab, sizeof t);
  of_tensor_options_init(&t);
  assert_int_equal(t.struct_size, sizeof(of_tensor_options_t));
  assert_int_equal(t.device_type, 0);
  assert_int_equal(t.device_index, 0);
  of_tensor_options_init(NULL); /* ignored */

  assert_int_equal(OF_DEVICE_CPU, 1);
  assert_int_equal(OF_DEVICE_CUDA, 2);
}

static void test_session_create_default(void** state) {
  (void)state;
  of_session_t* s = NULL;
  ASSERT_OK(of_session_create(NULL, &s));
  assert_non_null(s);
  /* Its default device is the CPU. */
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float32(), NULL, 0, NULL, &t));
  int32_t type = -1, index = -1;
  ASSERT_OK(of_tensor_device(t, &type, &index));
  assert_int_equal(type, OF_DEVICE_CPU);
  assert_int_equal(index, 0);
  of_tensor_release(t);
  of_session_destroy(s);
}

static void test_session_create_with_options(void** state) {
  (void)state;
  of_session_options_t o;
  of_session_options_init(&o);
  o.seed = 42;
  o.num_threads = 1;
  of_session_t* s = NULL;
  ASSERT_OK(of_session_create(&o, &s));
  assert_non_null(s);

  of_session_t* s2 = NULL;
  ASSERT_OK(of_session_create(&o, &s2));
  assert_non_null(s2);
  assert_ptr_not_equal(s, s2);
  of_session_destroy(s2);
  of_session_destroy(s);
}

static void test_session_options_older_caller(void** state) {
  (void)state;
  /* A caller built against an older, smaller struct: the fields beyond struct_size are not read. */
  of_session_options_t o;
  of_session_options_init(&o);
  o.struct_size = offsetof(of_session_options_t, num_threads);
  o.seed = 7;
  o.num_threads = -5;  /* beyond struct_size: ignored */
  o.device_type = 77;  /* beyond struct_size: ignored */
  o.device_index = -3; /* beyond struct_size: ignored */
  of_session_t* s = NULL;
  ASSERT_OK(of_session_create(&o, &s));
  assert_non_null(s);

  /* The seed (inside struct_size) was read: rand equals a session made with seed 7. */
  of_session_t* ref = of_test_session_seeded(7);
  of_test_assert_same_next_rand(s, ref, 16);
  of_session_destroy(ref);
  of_session_destroy(s);
}

static void test_session_create_bad_options(void** state) {
  (void)state;
  of_session_options_t o;
  of_session_t* s = SENTINEL_PTR(of_session_t*);

  of_session_options_init(&o);
  o.struct_size = 0;
  ASSERT_STATUS(of_session_create(&o, &s), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "struct_size");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));

  of_session_options_init(&o);
  o.device_type = 7;
  ASSERT_STATUS(of_session_create(&o, &s), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "device", "7");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));

  of_session_options_init(&o);
  o.device_type = 0;
  ASSERT_STATUS(of_session_create(&o, &s), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "device");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));

  of_session_options_init(&o);
  o.num_threads = -1;
  ASSERT_STATUS(of_session_create(&o, &s), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "num_threads");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));

  of_session_options_init(&o);
  o.device_index = 1; /* the CPU has only index 0 */
  ASSERT_STATUS(of_session_create(&o, &s), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "index");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));

  of_session_options_init(&o);
  o.device_index = -1;
  ASSERT_STATUS(of_session_create(&o, &s), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "index");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));
}

static void test_session_create_cuda(void** state) {
  (void)state;
  /* Without a GPU (or without CUDA in the build) a CUDA session is refused, never a crash; with one it
   * is made and its tensors live on the GPU. */
  assert_true(of_cuda_is_built() == 0 || of_cuda_is_built() == 1);
  of_session_options_t o;
  of_session_options_init(&o);
  o.device_type = OF_DEVICE_CUDA;
  of_session_t* s = SENTINEL_PTR(of_session_t*);
  of_status_t* status = of_session_create(&o, &s);
  if (status == NULL) {
    print_message("  a CUDA device is present: checking a CUDA session\n");
    assert_int_equal(of_cuda_is_built(), 1);
    assert_non_null(s);
    assert_ptr_not_equal(s, SENTINEL_PTR(of_session_t*));
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_zeros(s, of_dtype_float32(), NULL, 0, NULL, &t));
    int32_t type = -1, index = -1;
    ASSERT_OK(of_tensor_device(t, &type, &index));
    assert_int_equal(type, OF_DEVICE_CUDA);
    assert_int_equal(index, 0);
    float v = -1.0f;
    ASSERT_OK(of_tensor_copy_to_host(t, &v, sizeof v));
    assert_true(v == 0.0f);
    of_tensor_release(t);
    of_session_destroy(s);
  } else if (!of_cuda_is_built()) {
    ASSERT_STATUS(status, OF_STATUS_UNAVAILABLE, "of_session_create", "cuda");
  } else {
    ASSERT_STATUS2(status, OF_STATUS_UNAVAILABLE, OF_STATUS_UNIMPLEMENTED, "of_session_create", "cuda");
  }
  if (status != NULL) assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));

  /* A device index that no machine has. */
  o.device_index = 1000;
  s = SENTINEL_PTR(of_session_t*);
  ASSERT_STATUS2(of_session_create(&o, &s), OF_STATUS_UNAVAILABLE, OF_STATUS_UNIMPLEMENTED, "of_session_create",
                 "cuda");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));
  o.device_index = -1;
  ASSERT_STATUS(of_session_create(&o, &s), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "index");
  assert_ptr_equal(s, SENTINEL_PTR(of_session_t*));
}

static void test_session_create_null_out(void** state) {
  (void)state;
  ASSERT_STATUS(of_session_create(NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "out_session",
                "NULL");
  of_session_options_t o;
  of_session_options_init(&o);
  ASSERT_STATUS(of_session_create(&o, NULL), OF_STATUS_INVALID_ARGUMENT, "of_session_create", "out_session");
}

static void test_session_destroy_null(void** state) {
  (void)state;
  of_session_destroy(NULL);
}

static void test_tensors_outlive_session(void** state) {
  (void)state;
  of_session_t* s = of_test_session();
  const int64_t dims[] = {3};
  const int32_t data[] = {4, 5, 6};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_int32(), dims, 1, data, sizeof data, NULL, &t));
  of_session_destroy(s);
  int32_t back[3] = {0};
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_memory_equal(back, data, sizeof data);
  int64_t numel = 0;
  ASSERT_OK(of_tensor_numel(t, &numel));
  assert_int_equal(numel, 3);
  of_tensor_release(t);
}

static void test_dim_symbol(void** state) {
  of_session_t* s = (of_session_t*)*state;
  int64_t n1 = 0, n2 = 0, m = 0;
  ASSERT_OK(of_session_dim_symbol(s, "N", &n1));
  ASSERT_OK(of_session_dim_symbol(s, "N", &n2));
  ASSERT_OK(of_session_dim_symbol(s, "M", &m));
  assert_true(n1 == n2);
  assert_true(n1 != m);
  assert_true(n1 < 0);
  assert_true(m < 0);
  assert_true(n1 != OF_DIM_UNKNOWN);
  assert_true(m != OF_DIM_UNKNOWN);
  assert_int_equal(of_dim_is_symbol(n1), 1);
  assert_int_equal(of_dim_is_symbol(m), 1);
  assert_int_equal(of_dim_is_known(n1), 0);
  assert_int_equal(of_dim_is_known(m), 0);

  const char* name = NULL;
  size_t length = 99;
  ASSERT_OK(of_dim_symbol_name(n1, &name, &length));
  assert_non_null(name);
  assert_string_equal(name, "N");
  assert_int_equal(length, 1);
  ASSERT_OK(of_dim_symbol_name(m, &name, &length));
  assert_string_equal(name, "M");
  assert_int_equal(length, 1);

  /* A longer and a non-ASCII name: length is in bytes. */
  int64_t seq = 0, utf8 = 0;
  ASSERT_OK(of_session_dim_symbol(s, "seq_len", &seq));
  ASSERT_OK(of_dim_symbol_name(seq, &name, &length));
  assert_string_equal(name, "seq_len");
  assert_int_equal(length, 7);
  const char* const kUtf8 = "l\xc3\xa4nge"; /* "länge": 6 bytes */
  ASSERT_OK(of_session_dim_symbol(s, kUtf8, &utf8));
  ASSERT_OK(of_dim_symbol_name(utf8, &name, &length));
  assert_string_equal(name, kUtf8);
  assert_int_equal(length, 6);
  assert_true(seq != n1 && seq != m && utf8 != seq && utf8 != n1);
}

static void test_dim_symbols_differ_between_sessions(void** state) {
  (void)state;
  of_session_t* a = of_test_session();
  of_session_t* b = of_test_session();
  int64_t na = 0, nb = 0, na2 = 0;
  ASSERT_OK(of_session_dim_symbol(a, "N", &na));
  ASSERT_OK(of_session_dim_symbol(b, "N", &nb));
  ASSERT_OK(of_session_dim_symbol(a, "N", &na2));
  assert_true(na != nb);
  assert_true(na == na2);
  assert_int_equal(of_dim_is_symbol(na), 1);
  assert_int_equal(of_dim_is_symbol(nb), 1);
  /* Both are called N. */
  const char* name = NULL;
  size_t length = 0;
  ASSERT_OK(of_dim_symbol_name(nb, &name, &length));
  assert_string_equal(name, "N");
  of_session_destroy(b);
  of_session_destroy(a);
}

static void test_dim_symbol_name_outlives_session(void** state) {
  (void)state;
  /* The name is valid for the life of the process, not of the session. */
  of_session_t* s = of_test_session();
  int64_t batch = 0;
  ASSERT_OK(of_session_dim_symbol(s, "batch", &batch));
  const char* name = NULL;
  size_t length = 0;
  ASSERT_OK(of_dim_symbol_name(batch, &name, &length));
  of_session_destroy(s);
  assert_string_equal(name, "batch");
  assert_int_equal(length, 5);
  const char* again = NULL;
  ASSERT_OK(of_dim_symbol_name(batch, &again, &length));
  assert_string_equal(again, "batch");
  assert_int_equal(of_dim_is_symbol(batch), 1);
}

static void test_dim_symbol_errors(void** state) {
  of_session_t* s = (of_session_t*)*state;
  int64_t d = 1234;
  ASSERT_STATUS(of_session_dim_symbol(s, "", &d), OF_STATUS_INVALID_ARGUMENT, "of_session_dim_symbol", "empty");
  ASSERT_STATUS(of_session_dim_symbol(s, NULL, &d), OF_STATUS_INVALID_ARGUMENT, "of_session_dim_symbol", "name",
                "NULL");
  ASSERT_STATUS(of_session_dim_symbol(s, "1x", &d), OF_STATUS_INVALID_ARGUMENT, "of_session_dim_symbol", "1x",
                "digit");
  ASSERT_STATUS(of_session_dim_symbol(s, "9", &d), OF_STATUS_INVALID_ARGUMENT, "of_session_dim_symbol", "9");
  ASSERT_STATUS(of_session_dim_symbol(NULL, "N", &d), OF_STATUS_INVALID_ARGUMENT, "of_session_dim_symbol",
                "session", "NULL");
  assert_int_equal(d, 1234);
  ASSERT_STATUS(of_session_dim_symbol(s, "N", NULL), OF_STATUS_INVALID_ARGUMENT, "of_session_dim_symbol", "out_dim",
                "NULL");
}

static void test_dim_symbol_name_errors(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const char* name = SENTINEL_PTR(const char*);
  size_t length = 4321;
  const struct {
    int64_t dim;
    const char* text;
  } bad[] = {{5, "5"}, {0, "0"}, {OF_DIM_UNKNOWN, "dim"}, {-1, "-1"}, {UNCREATED_SYMBOL, "symbol"}};
  for (size_t i = 0; i < OF_ARRAY_SIZE(bad); ++i) {
    ASSERT_STATUS(of_dim_symbol_name(bad[i].dim, &name, &length), OF_STATUS_INVALID_ARGUMENT, "of_dim_symbol_name",
                  bad[i].text);
    assert_ptr_equal(name, SENTINEL_PTR(const char*));
    assert_int_equal(length, 4321);
  }

  int64_t n = 0;
  ASSERT_OK(of_session_dim_symbol(s, "N", &n));
  ASSERT_STATUS(of_dim_symbol_name(n, NULL, &length), OF_STATUS_INVALID_ARGUMENT, "of_dim_symbol_name", "out_name");
  assert_int_equal(length, 4321);
  ASSERT_STATUS(of_dim_symbol_name(n, &name, NULL), OF_STATUS_INVALID_ARGUMENT, "of_dim_symbol_name",
                "out_length");
  assert_ptr_equal(name, SENTINEL_PTR(const char*));
}

static void read_rand(of_session_t* s, float* out, size_t n) {
  const int64_t dims[] = {(int64_t)n};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_rand(s, of_dtype_float32(), dims, 1, NULL, &t));
  ASSERT_OK(of_tensor_copy_to_host(t, out, n * sizeof(float)));
  of_tensor_release(t);
}

static void test_manual_seed(void** state) {
  (void)state;
  of_session_t* s = of_test_session();
  float a[64], b[64], c[64], d[64], e[64];
  read_rand(s, a, 64);
  ASSERT_OK(of_session_manual_seed(s, 7));
  read_rand(s, b, 64);
  read_rand(s, c, 64);
  ASSERT_OK(of_session_manual_seed(s, 7));
  read_rand(s, d, 64);
  read_rand(s, e, 64);
  assert_memory_equal(b, d, sizeof b); /* the random tensors that follow repeat */
  assert_memory_equal(c, e, sizeof c);
  assert_memory_not_equal(b, c, sizeof b);
  assert_memory_not_equal(a, b, sizeof a); /* seed 0x5eed vs 7 */

  /* manual_seed(7) restarts exactly where a fresh session seeded 7 starts. */
  of_session_t* fresh = of_test_session_seeded(7);
  read_rand(fresh, e, 64);
  assert_memory_equal(b, e, sizeof b);

  /* Re-seeding with the default seed repeats the first draw of a default session. */
  ASSERT_OK(of_session_manual_seed(s, 0x5eed));
  read_rand(s, e, 64);
  assert_memory_equal(a, e, sizeof a);

  ASSERT_STATUS(of_session_manual_seed(NULL, 7), OF_STATUS_INVALID_ARGUMENT, "of_session_manual_seed", "session",
                "NULL");
  of_session_destroy(fresh);
  of_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dim_unknown_constant),
      cmocka_unit_test(test_dim_is_known),
      cmocka_unit_test(test_dim_is_symbol_on_non_symbols),
      cmocka_unit_test(test_session_options_init),
      cmocka_unit_test(test_session_create_default),
      cmocka_unit_test(test_session_create_with_options),
      cmocka_unit_test(test_session_options_older_caller),
      cmocka_unit_test(test_session_create_bad_options),
      cmocka_unit_test(test_session_create_cuda),
      cmocka_unit_test(test_session_create_null_out),
      cmocka_unit_test(test_session_destroy_null),
      cmocka_unit_test(test_tensors_outlive_session),
      cmocka_unit_test_setup_teardown(test_dim_symbol, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test(test_dim_symbols_differ_between_sessions),
      cmocka_unit_test(test_dim_symbol_name_outlives_session),
      cmocka_unit_test_setup_teardown(test_dim_symbol_errors, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_dim_symbol_name_errors, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test(test_manual_seed),
  };
  return cmocka_run_group_tests_name("capi.dims_session", tests, NULL, NULL);
}
