/* Tensors: creation (from data, adopt, empty/zeros/ones/full, rand/randn, arange), options, queries,
 * copies out and between devices, the devices' memory counters, reference counting and the deleter of
 * adopted memory. */
#include "capi_test_util.h"

#define UNCREATED_SYMBOL (OF_DIM_UNKNOWN + (((int64_t)1 << 31) - 1))

/*===--- helpers ---------------------------------------------------------------------------===*/

static uint16_t bits16(const void* p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Reads the tensor into a fresh buffer and checks its size. Caller frees. */
static void* read_exact(const of_tensor_t* t, size_t expected_nbytes) {
  size_t nbytes = 0;
  void* buf = of_test_read_all(t, &nbytes);
  assert_int_equal(nbytes, expected_nbytes);
  return buf;
}

static void assert_shape(const of_tensor_t* t, const of_dtype_t* dtype, const int64_t* dims, size_t ndim) {
  const of_dtype_t* d = NULL;
  ASSERT_OK(of_tensor_dtype(t, &d));
  assert_ptr_equal(d, dtype);
  size_t n = 99;
  ASSERT_OK(of_tensor_ndim(t, &n));
  assert_int_equal(n, ndim);
  int64_t got[8];
  for (size_t i = 0; i < 8; ++i) got[i] = -77;
  ASSERT_OK(of_tensor_dims(t, got, 8));
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) {
    assert_int_equal(got[i], dims[i]);
    numel *= dims[i];
  }
  for (size_t i = ndim; i < 8; ++i) assert_int_equal(got[i], -77); /* only ndim values written */
  int64_t numel_got = -1;
  ASSERT_OK(of_tensor_numel(t, &numel_got));
  assert_int_equal(numel_got, numel);
  size_t nbytes = 0;
  ASSERT_OK(of_tensor_nbytes(t, &nbytes));
  assert_int_equal(nbytes, (size_t)numel * of_dtype_size(dtype));
  int32_t type = -1, index = -1;
  ASSERT_OK(of_tensor_device(t, &type, &index));
  assert_int_equal(type, OF_DEVICE_CPU);
  assert_int_equal(index, 0);
}

/* The creation functions with the common (session, dtype, dims, ndim, options, out) signature. */
typedef of_status_t* (*creator_fn)(of_session_t*, const of_dtype_t*, const int64_t*, size_t,
                                   const of_tensor_options_t*, of_tensor_t**);

static unsigned char g_source[4096]; /* zeros: the data of from_data */

static of_status_t* make_from_data(of_session_t* s, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                                   const of_tensor_options_t* options, of_tensor_t** out) {
  /* The right byte count for the known dims (unknown ones count as 1: the call fails on them anyway). */
  size_t numel = 1;
  for (size_t i = 0; dims != NULL && i < ndim; ++i) numel *= dims[i] >= 0 ? (size_t)dims[i] : 1;
  const size_t nbytes = numel * (dtype != NULL ? of_dtype_size(dtype) : 4);
  assert_true(nbytes <= sizeof g_source);
  return of_tensor_from_data(s, dtype, dims, ndim, g_source, nbytes, options, out);
}
static of_status_t* make_full(of_session_t* s, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                              const of_tensor_options_t* options, of_tensor_t** out) {
  return of_tensor_full(s, dtype, dims, ndim, 1.0, options, out);
}

typedef struct {
  const char* name;
  creator_fn fn;
} creator;

static const creator kCreators[] = {
    {"of_tensor_from_data", make_from_data}, {"of_tensor_empty", of_tensor_empty},
    {"of_tensor_zeros", of_tensor_zeros},    {"of_tensor_ones", of_tensor_ones},
    {"of_tensor_full", make_full},           {"of_tensor_rand", of_tensor_rand},
    {"of_tensor_randn", of_tensor_randn},
};

/* Known contents of 6 elements of each dtype (valid values only: bools are 0 or 1). */
static void fill_known(const of_dtype_t* dtype, unsigned char* out, size_t nbytes) {
  if (dtype == of_dtype_bool()) {
    const unsigned char b[6] = {1, 0, 1, 1, 0, 0};
    memcpy(out, b, 6);
    return;
  }
  for (size_t i = 0; i < nbytes; ++i) out[i] = (unsigned char)(i * 37u + 11u);
}

/*===--- from_data and queries ----------------------------------------------------------------===*/

static void test_from_data_each_dtype(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 3};
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* dtype = of_test_dtype_getters[i]();
    const size_t nbytes = 6 * of_dtype_size(dtype);
    unsigned char data[48];
    fill_known(dtype, data, nbytes);
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_from_data(s, dtype, dims, 2, data, nbytes, NULL, &t));
    assert_non_null(t);
    assert_shape(t, dtype, dims, 2);
    void* back = read_exact(t, nbytes);
    assert_memory_equal(back, data, nbytes);
    free(back);
    of_tensor_release(t);
  }
}

static void test_from_data_copies(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {4};
  float data[4] = {1.5f, -2.0f, 3.25f, 0.0f};
  const float expected[4] = {1.5f, -2.0f, 3.25f, 0.0f};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_float32(), dims, 1, data, sizeof data, NULL, &t));
  data[0] = 99.0f; /* the tensor holds a copy */
  float back[4];
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_memory_equal(back, expected, sizeof back);
  of_tensor_release(t);
}

static void test_queries_3d(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 3, 4};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float64(), dims, 3, NULL, &t));
  assert_shape(t, of_dtype_float64(), dims, 3);
  int64_t numel = 0;
  ASSERT_OK(of_tensor_numel(t, &numel));
  assert_int_equal(numel, 24);
  size_t nbytes = 0;
  ASSERT_OK(of_tensor_nbytes(t, &nbytes));
  assert_int_equal(nbytes, 192);
  of_tensor_release(t);
}

static void test_dims_capacity(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 3, 4};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_empty(s, of_dtype_int8(), dims, 3, NULL, &t));
  int64_t out[5] = {-7, -7, -7, -7, -7};
  ASSERT_STATUS(of_tensor_dims(t, out, 2), OF_STATUS_OUT_OF_RANGE, "of_tensor_dims", "2", "3");
  for (size_t i = 0; i < 5; ++i) assert_int_equal(out[i], -7); /* untouched */
  ASSERT_STATUS(of_tensor_dims(t, NULL, 0), OF_STATUS_OUT_OF_RANGE, "of_tensor_dims");
  ASSERT_STATUS(of_tensor_dims(t, NULL, 3), OF_STATUS_INVALID_ARGUMENT, "of_tensor_dims", "out_dims", "NULL");
  ASSERT_OK(of_tensor_dims(t, out, 3));
  assert_int_equal(out[0], 2);
  assert_int_equal(out[1], 3);
  assert_int_equal(out[2], 4);
  assert_int_equal(out[3], -7);
  of_tensor_release(t);
}

static void test_query_errors(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const of_dtype_t* d = SENTINEL_PTR(const of_dtype_t*);
  size_t n = 555;
  int64_t dims[2] = {-7, -7};
  int64_t numel = 555;
  int32_t type = 555, index = 555;
  ASSERT_STATUS(of_tensor_dtype(NULL, &d), OF_STATUS_INVALID_ARGUMENT, "of_tensor_dtype", "tensor", "NULL");
  ASSERT_STATUS(of_tensor_ndim(NULL, &n), OF_STATUS_INVALID_ARGUMENT, "of_tensor_ndim", "tensor", "NULL");
  ASSERT_STATUS(of_tensor_dims(NULL, dims, 2), OF_STATUS_INVALID_ARGUMENT, "of_tensor_dims", "tensor", "NULL");
  ASSERT_STATUS(of_tensor_numel(NULL, &numel), OF_STATUS_INVALID_ARGUMENT, "of_tensor_numel", "tensor", "NULL");
  ASSERT_STATUS(of_tensor_nbytes(NULL, &n), OF_STATUS_INVALID_ARGUMENT, "of_tensor_nbytes", "tensor", "NULL");
  ASSERT_STATUS(of_tensor_device(NULL, &type, &index), OF_STATUS_INVALID_ARGUMENT, "of_tensor_device", "tensor",
                "NULL");

  const int64_t shape[] = {2};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_int16(), shape, 1, NULL, &t));
  ASSERT_STATUS(of_tensor_dtype(t, NULL), OF_STATUS_INVALID_ARGUMENT, "of_tensor_dtype", "out_dtype");
  ASSERT_STATUS(of_tensor_ndim(t, NULL), OF_STATUS_INVALID_ARGUMENT, "of_tensor_ndim", "out_ndim");
  ASSERT_STATUS(of_tensor_numel(t, NULL), OF_STATUS_INVALID_ARGUMENT, "of_tensor_numel", "out_numel");
  ASSERT_STATUS(of_tensor_nbytes(t, NULL), OF_STATUS_INVALID_ARGUMENT, "of_tensor_nbytes", "out_nbytes");
  ASSERT_STATUS(of_tensor_device(t, NULL, &index), OF_STATUS_INVALID_ARGUMENT, "of_tensor_device",
                "out_device_type");
  ASSERT_STATUS(of_tensor_device(t, &type, NULL), OF_STATUS_INVALID_ARGUMENT, "of_tensor_device",
                "out_device_index");
  /* Failed calls wrote nothing. */
  assert_ptr_equal(d, SENTINEL_PTR(const of_dtype_t*));
  assert_int_equal(n, 555);
  assert_int_equal(dims[0], -7);
  assert_int_equal(numel, 555);
  assert_int_equal(type, 555);
  assert_int_equal(index, 555);
  of_tensor_release(t);
}

static void test_zero_d(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const float value = 3.5f;
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_float32(), NULL, 0, &value, sizeof value, NULL, &t));
  size_t ndim = 99;
  ASSERT_OK(of_tensor_ndim(t, &ndim));
  assert_int_equal(ndim, 0);
  ASSERT_OK(of_tensor_dims(t, NULL, 0)); /* capacity 0 is enough for a 0-d tensor */
  int64_t dims[1] = {-7};
  ASSERT_OK(of_tensor_dims(t, dims, 1));
  assert_int_equal(dims[0], -7);
  int64_t numel = 0;
  ASSERT_OK(of_tensor_numel(t, &numel));
  assert_int_equal(numel, 1);
  size_t nbytes = 0;
  ASSERT_OK(of_tensor_nbytes(t, &nbytes));
  assert_int_equal(nbytes, 4);
  float back = 0;
  ASSERT_OK(of_tensor_copy_to_host(t, &back, sizeof back));
  assert_true(back == 3.5f);
  of_tensor_release(t);

  /* Every creator makes 0-d tensors, with dims NULL or not. */
  const int64_t unused[1] = {5};
  for (size_t i = 0; i < OF_ARRAY_SIZE(kCreators); ++i) {
    of_tensor_t* z = NULL;
    ASSERT_OK(kCreators[i].fn(s, of_dtype_float32(), NULL, 0, NULL, &z));
    assert_shape(z, of_dtype_float32(), NULL, 0);
    of_tensor_release(z);
    ASSERT_OK(kCreators[i].fn(s, of_dtype_float32(), unused, 0, NULL, &z));
    assert_shape(z, of_dtype_float32(), NULL, 0);
    of_tensor_release(z);
  }
}

static void test_zero_size_dim(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {3, 0, 2};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_int32(), dims, 3, NULL, 0, NULL, &t));
  assert_shape(t, of_dtype_int32(), dims, 3);
  ASSERT_OK(of_tensor_copy_to_host(t, NULL, 0));
  of_tensor_release(t);
  for (size_t i = 0; i < OF_ARRAY_SIZE(kCreators); ++i) {
    of_tensor_t* z = NULL;
    ASSERT_OK(kCreators[i].fn(s, of_dtype_float32(), dims, 3, NULL, &z));
    assert_shape(z, of_dtype_float32(), dims, 3);
    char dst[1];
    ASSERT_OK(of_tensor_copy_to_host(z, dst, 0));
    of_tensor_release(z);
  }
}

static void test_from_data_wrong_nbytes(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 2};
  const float data[5] = {0};
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_from_data(s, of_dtype_float32(), dims, 2, data, 12, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_from_data", "12", "16");
  ASSERT_STATUS(of_tensor_from_data(s, of_dtype_float32(), dims, 2, data, 20, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_from_data", "20", "16");
  ASSERT_STATUS(of_tensor_from_data(s, of_dtype_float32(), dims, 2, data, 0, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_from_data", "0", "16");
  /* 0-d: 4 bytes, not 8. */
  ASSERT_STATUS(of_tensor_from_data(s, of_dtype_float32(), NULL, 0, data, 8, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_from_data", "8", "4");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
}

static void test_from_data_null_data(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 2};
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_from_data(s, of_dtype_float32(), dims, 2, NULL, 16, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_from_data", "data", "NULL");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
}

/* The failures every creation function shares, each leaving *out_tensor untouched. */
static void test_creation_errors(void** state) {
  of_session_t* s = (of_session_t*)*state;
  int64_t sym = 0;
  ASSERT_OK(of_session_dim_symbol(s, "batch_sym", &sym));
  const int64_t dims_ok[] = {2, 3};
  const int64_t dims_unknown[] = {2, OF_DIM_UNKNOWN};
  const int64_t dims_symbol[] = {2, sym};
  const int64_t dims_neg[] = {2, -1};
  const int64_t dims_neg0[] = {-3};
  const int64_t dims_bad_symbol[] = {2, UNCREATED_SYMBOL};
  of_tensor_options_t zero_size;
  of_tensor_options_init(&zero_size);
  zero_size.struct_size = 0;
  of_tensor_options_t bad_type;
  of_tensor_options_init(&bad_type);
  bad_type.device_type = 7;
  of_tensor_options_t bad_index;
  of_tensor_options_init(&bad_index);
  bad_index.device_type = OF_DEVICE_CPU;
  bad_index.device_index = 1;
  const of_dtype_t* f32 = of_dtype_float32();

  for (size_t i = 0; i < OF_ARRAY_SIZE(kCreators); ++i) {
    const creator* c = &kCreators[i];
    of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
    print_message("  %s\n", c->name);
    ASSERT_STATUS(c->fn(NULL, f32, dims_ok, 2, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "session", "NULL");
    ASSERT_STATUS(c->fn(s, NULL, dims_ok, 2, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "dtype", "NULL");
    ASSERT_STATUS(c->fn(s, f32, dims_unknown, 2, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "not concrete",
                  "dim 1");
    ASSERT_STATUS(c->fn(s, f32, dims_symbol, 2, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "not concrete",
                  "dim 1", "batch_sym");
    ASSERT_STATUS(c->fn(s, f32, dims_neg, 2, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "dims[1]", "-1");
    ASSERT_STATUS(c->fn(s, f32, dims_neg0, 1, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "dims[0]", "-3");
    ASSERT_STATUS(c->fn(s, f32, dims_bad_symbol, 2, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "dims[1]");
    ASSERT_STATUS(c->fn(s, f32, NULL, 2, NULL, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "dims", "NULL");
    ASSERT_STATUS(c->fn(s, f32, dims_ok, 2, &zero_size, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "struct_size");
    ASSERT_STATUS(c->fn(s, f32, dims_ok, 2, &bad_type, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "device", "7");
    ASSERT_STATUS(c->fn(s, f32, dims_ok, 2, &bad_index, &t), OF_STATUS_INVALID_ARGUMENT, c->name, "index");
    assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
    ASSERT_STATUS(c->fn(s, f32, dims_ok, 2, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, c->name, "out_tensor", "NULL");
    /* And the same arguments, fixed, succeed. */
    ASSERT_OK(c->fn(s, f32, dims_ok, 2, NULL, &t));
    assert_shape(t, f32, dims_ok, 2);
    of_tensor_release(t);
  }
}

static void test_huge_shapes_fail_cleanly(void** state) {
  of_session_t* s = (of_session_t*)*state;
  /* 2^62 bytes of float32: the size fits in size_t but the memory does not exist. */
  const int64_t huge[] = {(int64_t)1 << 40, (int64_t)1 << 20};
  /* The element count overflows int64. */
  const int64_t overflow[] = {(int64_t)1 << 40, (int64_t)1 << 40};
  /* The byte count overflows size_t. */
  const int64_t bytes_overflow[] = {(int64_t)1 << 31, (int64_t)1 << 31};
  /* The element count is 0, but the other sizes multiply past int64: refused in either order. */
  const int64_t zero_last[] = {(int64_t)1 << 62, (int64_t)1 << 62, 0};
  const int64_t zero_first[] = {0, (int64_t)1 << 62, (int64_t)1 << 62};
  const struct {
    const int64_t* dims;
    size_t ndim;
    of_status_code_t code; /* the creation rules: too large to allocate, or too many to count */
  } cases[] = {{huge, 2, OF_STATUS_RESOURCE_EXHAUSTED},
               {overflow, 2, OF_STATUS_OUT_OF_RANGE},
               {bytes_overflow, 2, OF_STATUS_RESOURCE_EXHAUSTED},
               {zero_last, 3, OF_STATUS_OUT_OF_RANGE},
               {zero_first, 3, OF_STATUS_OUT_OF_RANGE}};
  for (size_t k = 0; k < OF_ARRAY_SIZE(cases); ++k) {
    const creator* list[] = {&kCreators[1], &kCreators[2], &kCreators[4], &kCreators[5]};
    for (size_t i = 0; i < OF_ARRAY_SIZE(list); ++i) {
      of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
      of_status_t* st = list[i]->fn(s, k == 2 ? of_dtype_float64() : of_dtype_float32(), cases[k].dims, cases[k].ndim,
                                    NULL, &t);
      assert_non_null(st);
      if (of_status_code(st) != cases[k].code) {
        print_error("%s, case %zu: expected %s, got %s: %s\n", list[i]->name, k, of_status_code_name(cases[k].code),
                    of_status_code_name(of_status_code(st)), of_status_message(st));
        of_status_destroy(st);
        fail();
      }
      assert_non_null(strstr(of_status_message(st), list[i]->name));
      of_status_destroy(st);
      assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
    }
  }
  /* arange with more elements than memory holds, and with too many to count. */
  of_tensor_t* a = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_arange(s, 0, 1e15, 1, of_dtype_float64(), NULL, &a), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_arange");
  ASSERT_STATUS(of_tensor_arange(s, 0, 1e17, 1, of_dtype_float64(), NULL, &a), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_arange");
  ASSERT_STATUS(of_tensor_arange(s, 0, 1e18, 1, of_dtype_float32(), NULL, &a), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_arange");
  ASSERT_STATUS(of_tensor_arange(s, 0, 1e19, 1, of_dtype_float32(), NULL, &a), OF_STATUS_OUT_OF_RANGE,
                "of_tensor_arange", "int64");
  assert_ptr_equal(a, SENTINEL_PTR(of_tensor_t*));
  /* Element counts that fit int64 but byte sizes that do not (bfloat16), or that no allocator can
   * round to a size class (uint8): too large to allocate, before anything is written. */
  const int64_t max_elements[] = {1, INT64_MAX};
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_randn(s, of_dtype_bfloat16(), max_elements, 2, NULL, &t), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_randn");
  ASSERT_STATUS(of_tensor_zeros(s, of_dtype_uint8(), max_elements, 2, NULL, &t), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_zeros");
  ASSERT_STATUS(of_tensor_full(s, of_dtype_int16(), max_elements + 1, 1, 3, NULL, &t), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_full");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  /* Out of memory specifically. */
  ASSERT_STATUS(of_tensor_zeros(s, of_dtype_float32(), huge, 2, NULL, &t), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_zeros");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
}

/*===--- zeros, ones, full, empty --------------------------------------------------------------===*/

static void assert_all_elements(const of_tensor_t* t, const void* element, size_t size, size_t count) {
  unsigned char* buf = read_exact(t, size * count);
  for (size_t i = 0; i < count; ++i) {
    if (memcmp(buf + i * size, element, size) != 0) {
      free(buf);
      fail_msg("element %zu differs from the expected value", i);
    }
  }
  free(buf);
}

static void test_zeros_ones_each_dtype(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {3, 5};
  /* The bit patterns of 1 per dtype, little-endian. */
  const int8_t one_i8 = 1;
  const uint8_t one_u8 = 1;
  const int16_t one_i16 = 1;
  const int32_t one_i32 = 1;
  const int64_t one_i64 = 1;
  const uint16_t one_f16 = 0x3C00, one_bf16 = 0x3F80;
  const float one_f32 = 1.0f;
  const double one_f64 = 1.0;
  const unsigned char one_bool = 1;
  const void* const ones[OF_TEST_NUM_DTYPES] = {&one_bool, &one_i8,  &one_u8,   &one_i16, &one_i32,
                                                &one_i64,  &one_f16, &one_bf16, &one_f32, &one_f64};
  const unsigned char zero[8] = {0};
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* dtype = of_test_dtype_getters[i]();
    const size_t size = of_dtype_size(dtype);
    of_tensor_t* z = NULL;
    of_tensor_t* o = NULL;
    ASSERT_OK(of_tensor_zeros(s, dtype, dims, 2, NULL, &z));
    ASSERT_OK(of_tensor_ones(s, dtype, dims, 2, NULL, &o));
    assert_shape(z, dtype, dims, 2);
    assert_shape(o, dtype, dims, 2);
    assert_all_elements(z, zero, size, 15);
    assert_all_elements(o, ones[i], size, 15);
    of_tensor_release(z);
    of_tensor_release(o);
  }
}

typedef struct {
  of_test_dtype_getter dtype;
  double value;
  unsigned char bytes[8]; /* the expected element, little-endian */
} full_case;

static void test_full_values(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const full_case cases[] = {
      {of_dtype_bool, 1.0, {1}},
      {of_dtype_bool, 0.0, {0}},
      {of_dtype_bool, -0.0, {0}},
      {of_dtype_int8, -128.0, {0x80}},
      {of_dtype_int8, 127.0, {0x7f}},
      {of_dtype_uint8, 255.0, {0xff}},
      {of_dtype_uint8, 0.0, {0}},
      {of_dtype_int16, -32768.0, {0x00, 0x80}},
      {of_dtype_int16, 32767.0, {0xff, 0x7f}},
      {of_dtype_int32, -7.0, {0xf9, 0xff, 0xff, 0xff}},
      {of_dtype_int32, 2147483647.0, {0xff, 0xff, 0xff, 0x7f}},
      {of_dtype_int32, -2147483648.0, {0x00, 0x00, 0x00, 0x80}},
      {of_dtype_int64, 1e15, {0x00, 0x80, 0xc6, 0xa4, 0x7e, 0x8d, 0x03, 0x00}},
      {of_dtype_int64, -9223372036854775808.0, {0, 0, 0, 0, 0, 0, 0, 0x80}},
      {of_dtype_float16, 1.0, {0x00, 0x3c}},
      {of_dtype_float16, -3.0, {0x00, 0xc2}},
      {of_dtype_float16, 0.5, {0x00, 0x38}},
      {of_dtype_float16, 65504.0, {0xff, 0x7b}},
      {of_dtype_bfloat16, 1.0, {0x80, 0x3f}},
      {of_dtype_bfloat16, -3.0, {0x40, 0xc0}},
      {of_dtype_bfloat16, 0.5, {0x00, 0x3f}},
      {of_dtype_float32, 1.0, {0x00, 0x00, 0x80, 0x3f}},
      {of_dtype_float32, -2.5, {0x00, 0x00, 0x20, 0xc0}},
      {of_dtype_float64, 1.0, {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
      {of_dtype_float64, 0.1, {0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f}},
  };
  const int64_t dims[] = {7};
  for (size_t i = 0; i < OF_ARRAY_SIZE(cases); ++i) {
    const of_dtype_t* dtype = cases[i].dtype();
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_full(s, dtype, dims, 1, cases[i].value, NULL, &t));
    assert_shape(t, dtype, dims, 1);
    unsigned char* buf = read_exact(t, 7 * of_dtype_size(dtype));
    for (size_t e = 0; e < 7; ++e) {
      if (memcmp(buf + e * of_dtype_size(dtype), cases[i].bytes, of_dtype_size(dtype)) != 0) {
        free(buf);
        fail_msg("full(%s, %g): element %zu has the wrong bits", of_dtype_name(dtype), cases[i].value, e);
      }
    }
    free(buf);
    of_tensor_release(t);
  }
  /* float32 0.1 is the nearest float. */
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_full(s, of_dtype_float32(), NULL, 0, 0.1, NULL, &t));
  float f = 0;
  ASSERT_OK(of_tensor_copy_to_host(t, &f, sizeof f));
  assert_true(f == 0.1f);
  of_tensor_release(t);
}

static void test_full_unrepresentable(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const struct {
    of_test_dtype_getter dtype;
    double value;
    const char* text;
  } bad[] = {
      {of_dtype_int32, 2.5, "2.5"},
      {of_dtype_uint8, 300.0, "300"},
      {of_dtype_uint8, -1.0, "-1"},
      {of_dtype_int8, 128.0, "128"},
      {of_dtype_int8, -129.0, "-129"},
      {of_dtype_int16, 32768.0, "32768"},
      {of_dtype_int32, 2147483648.0, "2147483648"},
      {of_dtype_int64, 9223372036854775808.0, "int64"},
      {of_dtype_int32, NAN, "int32"},
      {of_dtype_int64, INFINITY, "int64"},
      {of_dtype_bool, 2.0, "2"},
      {of_dtype_bool, 0.5, "0.5"},
      {of_dtype_bool, -1.0, "-1"},
      {of_dtype_float16, 1e6, "float16"},
      {of_dtype_float16, -70000.0, "float16"},
      {of_dtype_bfloat16, 1e39, "bfloat16"},
      {of_dtype_float32, 1e39, "float32"},
      {of_dtype_float32, -1e300, "float32"},
  };
  const int64_t dims[] = {3};
  for (size_t i = 0; i < OF_ARRAY_SIZE(bad); ++i) {
    of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
    print_message("  full(%s, %g)\n", of_dtype_name(bad[i].dtype()), bad[i].value);
    ASSERT_STATUS(of_tensor_full(s, bad[i].dtype(), dims, 1, bad[i].value, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                  "of_tensor_full", "value", bad[i].text, of_dtype_name(bad[i].dtype()));
    assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  }
}

/* A bool is the byte 0 or 1 (a kernel reading another byte as a bool is undefined behaviour): other
 * bytes are refused where data comes in, and empty bool tensors are all false even in reused memory. */
static void test_bool_bytes_are_0_or_1(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 3};
  const unsigned char bad[6] = {0, 1, 1, 0, 255, 1};
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_from_data(s, of_dtype_bool(), dims, 2, bad, sizeof bad, NULL, &t),
                OF_STATUS_INVALID_ARGUMENT, "of_tensor_from_data", "byte 255", "element 4");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  /* The same bytes are fine as uint8. */
  ASSERT_OK(of_tensor_from_data(s, of_dtype_uint8(), dims, 2, bad, sizeof bad, NULL, &t));
  of_tensor_release(t);
  /* Dirty a block, free it, and take one of the same size again (the CPU allocator reuses blocks). */
  const int64_t big[] = {4096};
  unsigned char* ones = malloc(4096);
  assert_non_null(ones);
  memset(ones, 0xAB, 4096);
  for (int round = 0; round < 3; ++round) {
    ASSERT_OK(of_tensor_from_data(s, of_dtype_uint8(), big, 1, ones, 4096, NULL, &t));
    of_tensor_release(t);
    ASSERT_OK(of_tensor_empty(s, of_dtype_bool(), big, 1, NULL, &t));
    unsigned char* got = read_exact(t, 4096);
    for (size_t i = 0; i < 4096; ++i) {
      if (got[i] != 0) fail_msg("empty bool element %zu is the byte %d", i, got[i]);
    }
    free(got);
    of_tensor_release(t);
  }
  free(ones);
}

static void test_empty(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {4, 8};
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* dtype = of_test_dtype_getters[i]();
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_empty(s, dtype, dims, 2, NULL, &t));
    assert_shape(t, dtype, dims, 2);
    free(read_exact(t, 32 * of_dtype_size(dtype))); /* readable; contents unspecified */
    of_tensor_release(t);
  }
}

/*===--- rand, randn -------------------------------------------------------------------------===*/

static double element_as_double(const of_dtype_t* dtype, const unsigned char* p) {
  if (dtype == of_dtype_float32()) {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
  }
  if (dtype == of_dtype_float64()) {
    double d;
    memcpy(&d, p, sizeof d);
    return d;
  }
  if (dtype == of_dtype_float16()) return of_test_f16_to_float(bits16(p));
  if (dtype == of_dtype_bfloat16()) return of_test_bf16_to_float(bits16(p));
  fail_msg("not a floating dtype");
  return 0;
}

static void moments(const of_tensor_t* t, const of_dtype_t* dtype, size_t n, double* mean, double* var,
                    double* min, double* max) {
  const size_t size = of_dtype_size(dtype);
  unsigned char* buf = read_exact(t, n * size);
  double sum = 0, sum2 = 0, lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    const double v = element_as_double(dtype, buf + i * size);
    sum += v;
    sum2 += v * v;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  free(buf);
  *mean = sum / (double)n;
  *var = sum2 / (double)n - *mean * *mean;
  *min = lo;
  *max = hi;
}

static void test_rand_uniform(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const of_test_dtype_getter floats[] = {of_dtype_float32, of_dtype_float64, of_dtype_float16, of_dtype_bfloat16};
  const size_t n = 100000;
  const int64_t dims[] = {100, 1000};
  for (size_t i = 0; i < OF_ARRAY_SIZE(floats); ++i) {
    const of_dtype_t* dtype = floats[i]();
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_rand(s, dtype, dims, 2, NULL, &t));
    assert_shape(t, dtype, dims, 2);
    double mean, var, lo, hi;
    moments(t, dtype, n, &mean, &var, &lo, &hi);
    print_message("  rand %s: mean %f var %f min %g max %g\n", of_dtype_name(dtype), mean, var, lo, hi);
    assert_true(lo >= 0.0);
    assert_true(hi < 1.0);
    assert_true(fabs(mean - 0.5) < 0.01);
    assert_true(fabs(var - 1.0 / 12.0) < 0.01);
    assert_true(lo < 0.001 && hi > 0.99); /* bfloat16's largest value below 1 is 1 - 2^-8 */
    of_tensor_release(t);
  }
}

static void test_randn_normal(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const of_test_dtype_getter floats[] = {of_dtype_float32, of_dtype_float64, of_dtype_float16, of_dtype_bfloat16};
  const size_t n = 100000;
  const int64_t dims[] = {(int64_t)n};
  for (size_t i = 0; i < OF_ARRAY_SIZE(floats); ++i) {
    const of_dtype_t* dtype = floats[i]();
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_randn(s, dtype, dims, 1, NULL, &t));
    assert_shape(t, dtype, dims, 1);
    double mean, var, lo, hi;
    moments(t, dtype, n, &mean, &var, &lo, &hi);
    print_message("  randn %s: mean %f var %f min %g max %g\n", of_dtype_name(dtype), mean, var, lo, hi);
    assert_true(fabs(mean) < 0.02);
    assert_true(fabs(var - 1.0) < 0.05);
    assert_true(lo < -3.0 && hi > 3.0); /* 100000 normals reach beyond 3 sigma on both sides */
    assert_true(lo > -10.0 && hi < 10.0);
    of_tensor_release(t);
  }
}

static void draw(of_session_t* s, int normal, const of_dtype_t* dtype, size_t n, void* out) {
  const int64_t dims[] = {(int64_t)n};
  of_tensor_t* t = NULL;
  ASSERT_OK((normal ? of_tensor_randn : of_tensor_rand)(s, dtype, dims, 1, NULL, &t));
  ASSERT_OK(of_tensor_copy_to_host(t, out, n * of_dtype_size(dtype)));
  of_tensor_release(t);
}

static void test_rand_reproducible(void** state) {
  (void)state;
  of_session_t* a = of_test_session_seeded(123);
  of_session_t* b = of_test_session_seeded(123);
  of_session_t* c = of_test_session_seeded(124);
  float ra[1000], rb[1000], rc[1000], ra2[1000];
  double na[500], nb[500];
  draw(a, 0, of_dtype_float32(), 1000, ra);
  draw(b, 0, of_dtype_float32(), 1000, rb);
  draw(c, 0, of_dtype_float32(), 1000, rc);
  assert_memory_equal(ra, rb, sizeof ra);     /* same seed: identical bytes */
  assert_memory_not_equal(ra, rc, sizeof ra); /* another seed: different */
  draw(a, 1, of_dtype_float64(), 500, na);
  draw(b, 1, of_dtype_float64(), 500, nb);
  assert_memory_equal(na, nb, sizeof na); /* and the draws that follow too */
  draw(a, 0, of_dtype_float32(), 1000, ra2);
  assert_memory_not_equal(ra, ra2, sizeof ra); /* successive draws differ */
  of_session_destroy(c);
  of_session_destroy(b);
  of_session_destroy(a);
}

static void test_rand_non_floating(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const of_test_dtype_getter ints[] = {of_dtype_bool,  of_dtype_int8,  of_dtype_uint8,
                                       of_dtype_int16, of_dtype_int32, of_dtype_int64};
  const int64_t dims[] = {4};
  for (size_t i = 0; i < OF_ARRAY_SIZE(ints); ++i) {
    of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
    ASSERT_STATUS(of_tensor_rand(s, ints[i](), dims, 1, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_rand",
                  "floating", of_dtype_name(ints[i]()));
    ASSERT_STATUS(of_tensor_randn(s, ints[i](), dims, 1, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_randn",
                  "floating", of_dtype_name(ints[i]()));
    assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  }
}

/* A failed random call has no effect: the generator does not advance, so the draws that follow equal
 * those of a session with the same seed that never saw the failed call. */
static void test_rand_failure_keeps_generator(void** state) {
  (void)state;
  of_session_t* s = of_test_session_seeded(99);
  of_session_t* ref = of_test_session_seeded(99);
  const int64_t dims_unknown[] = {OF_DIM_UNKNOWN};
  const int64_t dims_ok[] = {16};
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_rand(s, of_dtype_int32(), dims_ok, 1, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_rand");
  ASSERT_STATUS(of_tensor_randn(s, of_dtype_float32(), dims_unknown, 1, NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_randn");
  ASSERT_STATUS(of_tensor_rand(s, of_dtype_float32(), dims_ok, 1, NULL, NULL), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_rand");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  of_test_assert_same_next_rand(s, ref, 16);
  of_session_destroy(ref);
  of_session_destroy(s);
}

/* Also when the failure comes late: an unavailable device (a CUDA index no machine has). */
static void test_rand_device_failure_keeps_generator(void** state) {
  (void)state;
  of_session_t* s = of_test_session_seeded(98);
  of_session_t* ref = of_test_session_seeded(98);
  const int64_t dims[] = {16};
  of_tensor_options_t cuda;
  of_tensor_options_init(&cuda);
  cuda.device_type = OF_DEVICE_CUDA;
  cuda.device_index = 1000;
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS2(of_tensor_rand(s, of_dtype_float32(), dims, 1, &cuda, &t), OF_STATUS_UNAVAILABLE,
                 OF_STATUS_UNIMPLEMENTED, "of_tensor_rand");
  ASSERT_STATUS2(of_tensor_randn(s, of_dtype_float32(), dims, 1, &cuda, &t), OF_STATUS_UNAVAILABLE,
                 OF_STATUS_UNIMPLEMENTED, "of_tensor_randn");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  of_test_assert_same_next_rand(s, ref, 16);
  of_session_destroy(ref);
  of_session_destroy(s);
}

/* And when memory runs out. */
static void test_rand_out_of_memory_keeps_generator(void** state) {
  (void)state;
  of_session_t* s = of_test_session_seeded(97);
  of_session_t* ref = of_test_session_seeded(97);
  const int64_t huge[] = {(int64_t)1 << 40, (int64_t)1 << 20}; /* 2^62 bytes of float32 */
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_rand(s, of_dtype_float32(), huge, 2, NULL, &t), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_rand");
  ASSERT_STATUS(of_tensor_randn(s, of_dtype_float32(), huge, 2, NULL, &t), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_randn");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  of_test_assert_same_next_rand(s, ref, 16);
  of_session_destroy(ref);
  of_session_destroy(s);
}

/*===--- arange ------------------------------------------------------------------------------===*/

static of_tensor_t* arange_ok(of_session_t* s, double start, double end, double step, const of_dtype_t* dtype,
                              int64_t expected_n) {
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_arange(s, start, end, step, dtype, NULL, &t));
  assert_shape(t, dtype, &expected_n, 1);
  return t;
}

static void test_arange_values(void** state) {
  of_session_t* s = (of_session_t*)*state;
  {
    of_tensor_t* t = arange_ok(s, 0, 5, 1, of_dtype_int64(), 5);
    int64_t v[5];
    const int64_t expected[5] = {0, 1, 2, 3, 4};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  {
    of_tensor_t* t = arange_ok(s, 0, 1, 0.25, of_dtype_float32(), 4);
    float v[4];
    const float expected[4] = {0.0f, 0.25f, 0.5f, 0.75f};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  {
    of_tensor_t* t = arange_ok(s, 5, 0, -2, of_dtype_int64(), 3);
    int64_t v[3];
    const int64_t expected[3] = {5, 3, 1};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  {
    of_tensor_t* t = arange_ok(s, 5, 0, -2, of_dtype_float64(), 3);
    double v[3];
    const double expected[3] = {5, 3, 1};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  {
    /* The end need not be integral for integer dtypes; only the values must be. */
    of_tensor_t* t = arange_ok(s, -2, 2.5, 1, of_dtype_int32(), 5);
    int32_t v[5];
    const int32_t expected[5] = {-2, -1, 0, 1, 2};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  {
    of_tensor_t* t = arange_ok(s, 250, 256, 2, of_dtype_uint8(), 3);
    uint8_t v[3];
    const uint8_t expected[3] = {250, 252, 254};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  {
    of_tensor_t* t = arange_ok(s, 2.5, 4, 0.5, of_dtype_float16(), 3);
    uint16_t v[3];
    const uint16_t expected[3] = {0x4100, 0x4200, 0x4300};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  {
    of_tensor_t* t = arange_ok(s, 2.5, 4, 0.5, of_dtype_bfloat16(), 3);
    uint16_t v[3];
    const uint16_t expected[3] = {0x4020, 0x4040, 0x4060};
    ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
    assert_memory_equal(v, expected, sizeof v);
    of_tensor_release(t);
  }
  /* Empty ranges. */
  of_tensor_release(arange_ok(s, 0, 0, 1, of_dtype_float32(), 0));
  of_tensor_release(arange_ok(s, 3, 3, -1, of_dtype_int64(), 0));
  /* ceil((end - start) / step) elements. */
  of_tensor_release(arange_ok(s, 0, 10, 3, of_dtype_int16(), 4));
  of_tensor_release(arange_ok(s, 0, 1, 0.3, of_dtype_float64(), 4));
}

static void test_arange_errors(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const of_dtype_t* f32 = of_dtype_float32();
  const of_dtype_t* i32 = of_dtype_int32();
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_arange(s, 0, 5, 0, f32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange", "step",
                "zero");
  ASSERT_STATUS(of_tensor_arange(s, 0, 5, -1, f32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "step");
  ASSERT_STATUS(of_tensor_arange(s, 5, 0, 1, i32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange", "step");
  ASSERT_STATUS(of_tensor_arange(s, NAN, 5, 1, f32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "finite");
  ASSERT_STATUS(of_tensor_arange(s, 0, NAN, 1, f32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "finite");
  ASSERT_STATUS(of_tensor_arange(s, 0, 5, NAN, f32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "finite");
  ASSERT_STATUS(of_tensor_arange(s, 0, INFINITY, 1, f32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "finite");
  /* Integer dtypes need integral values: a fractional step or start. */
  ASSERT_STATUS(of_tensor_arange(s, 0, 2, 0.5, i32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "int32");
  ASSERT_STATUS(of_tensor_arange(s, 0, 0.5, 0.5, i32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "step");
  ASSERT_STATUS(of_tensor_arange(s, 0.5, 3, 1, i32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "start");
  /* Values out of the dtype's range. */
  ASSERT_STATUS(of_tensor_arange(s, 0, 300, 1, of_dtype_int8(), NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_arange", "int8");
  ASSERT_STATUS(of_tensor_arange(s, -2, 2, 1, of_dtype_uint8(), NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_arange", "uint8");
  ASSERT_STATUS(of_tensor_arange(s, 0, 2, 1, of_dtype_bool(), NULL, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_arange", "bool");
  /* Handles and options. */
  ASSERT_STATUS(of_tensor_arange(NULL, 0, 5, 1, f32, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "session", "NULL");
  ASSERT_STATUS(of_tensor_arange(s, 0, 5, 1, NULL, NULL, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "dtype", "NULL");
  of_tensor_options_t o;
  of_tensor_options_init(&o);
  o.struct_size = 0;
  ASSERT_STATUS(of_tensor_arange(s, 0, 5, 1, f32, &o, &t), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "struct_size");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  ASSERT_STATUS(of_tensor_arange(s, 0, 5, 1, f32, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "of_tensor_arange",
                "out_tensor", "NULL");
}

/*===--- options -----------------------------------------------------------------------------===*/

static void test_tensor_options(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2};
  of_tensor_options_t o;
  int32_t type = -1, index = -1;

  /* device_type 0: the session's default device (the CPU). */
  of_tensor_options_init(&o);
  for (size_t i = 0; i < OF_ARRAY_SIZE(kCreators); ++i) {
    of_tensor_t* t = NULL;
    ASSERT_OK(kCreators[i].fn(s, of_dtype_float32(), dims, 1, &o, &t));
    ASSERT_OK(of_tensor_device(t, &type, &index));
    assert_int_equal(type, OF_DEVICE_CPU);
    assert_int_equal(index, 0);
    of_tensor_release(t);
  }
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_arange(s, 0, 3, 1, of_dtype_float32(), &o, &t));
  of_tensor_release(t);

  /* The CPU, explicitly. */
  o.device_type = OF_DEVICE_CPU;
  o.device_index = 0;
  ASSERT_OK(of_tensor_ones(s, of_dtype_int32(), dims, 1, &o, &t));
  ASSERT_OK(of_tensor_device(t, &type, &index));
  assert_int_equal(type, OF_DEVICE_CPU);
  assert_int_equal(index, 0);
  of_tensor_release(t);

  /* An older caller's smaller struct: the device fields beyond struct_size are not read. */
  of_tensor_options_init(&o);
  o.struct_size = offsetof(of_tensor_options_t, device_type);
  o.device_type = 77;
  o.device_index = -9;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_int32(), dims, 1, &o, &t));
  ASSERT_OK(of_tensor_device(t, &type, &index));
  assert_int_equal(type, OF_DEVICE_CPU);
  of_tensor_release(t);

  /* device_index is ignored when device_type is 0. */
  of_tensor_options_init(&o);
  o.device_index = 5;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_int32(), dims, 1, &o, &t));
  of_tensor_release(t);
}

static void test_tensor_options_cuda(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2};
  of_tensor_options_t o;
  of_tensor_options_init(&o);
  o.device_type = OF_DEVICE_CUDA;
  /* Without a GPU every creation on CUDA is refused, never a crash; with one, it is made there. */
  const int available = of_test_cuda_available();
  print_message("  CUDA device %s\n", available ? "present: creation must succeed" : "absent: creation must fail");
  const of_status_code_t first = OF_STATUS_UNAVAILABLE;
  const of_status_code_t second = of_cuda_is_built() ? OF_STATUS_UNIMPLEMENTED : OF_STATUS_UNAVAILABLE;
  for (size_t i = 0; i <= OF_ARRAY_SIZE(kCreators); ++i) {
    const char* name = i < OF_ARRAY_SIZE(kCreators) ? kCreators[i].name : "of_tensor_arange";
    of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
    of_status_t* st = i < OF_ARRAY_SIZE(kCreators) ? kCreators[i].fn(s, of_dtype_float32(), dims, 1, &o, &t)
                                                   : of_tensor_arange(s, 0, 2, 1, of_dtype_float32(), &o, &t);
    if (available) {
      ASSERT_OK(st);
      int32_t type = -1, index = -1;
      ASSERT_OK(of_tensor_device(t, &type, &index));
      assert_int_equal(type, OF_DEVICE_CUDA);
      assert_int_equal(index, 0);
      free(read_exact(t, 2 * sizeof(float)));
      of_tensor_release(t);
    } else {
      ASSERT_STATUS2(st, first, second, name, "cuda");
      assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
    }
  }
  /* A device index that no machine has, and a negative one. */
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  o.device_index = 1000;
  ASSERT_STATUS2(of_tensor_zeros(s, of_dtype_float32(), dims, 1, &o, &t), first, second, "of_tensor_zeros", "cuda");
  o.device_index = -1;
  ASSERT_STATUS(of_tensor_zeros(s, of_dtype_float32(), dims, 1, &o, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_zeros", "index");
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
}

/*===--- copy_to_host, retain/release ----------------------------------------------------------===*/

static void test_copy_to_host_errors(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {3};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_ones(s, of_dtype_float32(), dims, 1, NULL, &t));
  unsigned char dst[16];
  memset(dst, 0xcd, sizeof dst);
  ASSERT_STATUS(of_tensor_copy_to_host(t, dst, 11), OF_STATUS_INVALID_ARGUMENT, "of_tensor_copy_to_host", "11",
                "12");
  ASSERT_STATUS(of_tensor_copy_to_host(t, dst, 16), OF_STATUS_INVALID_ARGUMENT, "of_tensor_copy_to_host", "16",
                "12");
  ASSERT_STATUS(of_tensor_copy_to_host(t, dst, 0), OF_STATUS_INVALID_ARGUMENT, "of_tensor_copy_to_host", "0", "12");
  for (size_t i = 0; i < sizeof dst; ++i) assert_int_equal(dst[i], 0xcd); /* nothing copied */
  ASSERT_STATUS(of_tensor_copy_to_host(t, NULL, 12), OF_STATUS_INVALID_ARGUMENT, "of_tensor_copy_to_host", "NULL");
  ASSERT_STATUS(of_tensor_copy_to_host(NULL, dst, 12), OF_STATUS_INVALID_ARGUMENT, "of_tensor_copy_to_host",
                "tensor", "NULL");
  ASSERT_OK(of_tensor_copy_to_host(t, dst, 12));
  const float expected[3] = {1, 1, 1};
  assert_memory_equal(dst, expected, 12);
  assert_int_equal(dst[12], 0xcd);
  of_tensor_release(t);
}

/*===--- devices ----------------------------------------------------------------------------===*/

/* A copy onto the CPU of a transposed view: contiguous, the view's values, memory of its own, no
 * autograd history. */
static void test_copy_to_device(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 3};
  const float values[6] = {1, 2, 3, 4, 5, 6};
  of_tensor_t *x = NULL, *xt = NULL, *copy = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_float32(), dims, 2, values, sizeof values, NULL, &x));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_transpose(s, x, 0, 1, &xt));
  ASSERT_OK(of_tensor_copy_to_device(xt, OF_DEVICE_CPU, 0, &copy));
  const int64_t tdims[] = {3, 2};
  assert_shape(copy, of_dtype_float32(), tdims, 2);
  float* got = read_exact(copy, sizeof values);
  const float expected[6] = {1, 4, 2, 5, 3, 6};
  assert_memory_equal(got, expected, sizeof expected);
  free(got);
  of_bool_t requires_grad = 7;
  ASSERT_OK(of_tensor_requires_grad(copy, &requires_grad));
  assert_int_equal(requires_grad, 0);
  /* Its own memory: the source's storage goes, the copy stays. */
  of_tensor_release(xt);
  of_tensor_release(x);
  got = read_exact(copy, sizeof values);
  assert_memory_equal(got, expected, sizeof expected);
  free(got);

  /* Another dtype, and a copy of a copy on the same device. */
  const int64_t n[] = {4};
  const int64_t ivalues[4] = {-1, 0, 1, (int64_t)1 << 40};
  of_tensor_t *i64 = NULL, *i64_copy = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_int64(), n, 1, ivalues, sizeof ivalues, NULL, &i64));
  ASSERT_OK(of_tensor_copy_to_device(i64, OF_DEVICE_CPU, 0, &i64_copy));
  int64_t* igot = read_exact(i64_copy, sizeof ivalues);
  assert_memory_equal(igot, ivalues, sizeof ivalues);
  free(igot);
  of_tensor_release(i64_copy);

  /* Errors name the argument; nothing is written. */
  of_tensor_t* none = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_copy_to_device(NULL, OF_DEVICE_CPU, 0, &none), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_copy_to_device", "tensor");
  ASSERT_STATUS(of_tensor_copy_to_device(i64, 9, 0, &none), OF_STATUS_INVALID_ARGUMENT, "of_tensor_copy_to_device",
                "device type 9");
  ASSERT_STATUS(of_tensor_copy_to_device(i64, OF_DEVICE_CPU, 1, &none), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_copy_to_device", "index");
  ASSERT_STATUS(of_tensor_copy_to_device(i64, OF_DEVICE_CUDA, 4096, &none), OF_STATUS_UNAVAILABLE,
                "of_tensor_copy_to_device", "cuda:4096");
  assert_ptr_equal(none, SENTINEL_PTR(of_tensor_t*));
  ASSERT_STATUS(of_tensor_copy_to_device(i64, OF_DEVICE_CPU, 0, NULL), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_copy_to_device", "out_tensor");
  /* CUDA and back where there is a GPU; a clear refusal where not. */
  if (of_test_cuda_available()) {
    of_tensor_t *gpu = NULL, *back = NULL;
    ASSERT_OK(of_tensor_copy_to_device(i64, OF_DEVICE_CUDA, 0, &gpu));
    int32_t type = -1, index = -1;
    ASSERT_OK(of_tensor_device(gpu, &type, &index));
    assert_int_equal(type, OF_DEVICE_CUDA);
    ASSERT_OK(of_tensor_copy_to_device(gpu, OF_DEVICE_CPU, 0, &back));
    igot = read_exact(back, sizeof ivalues);
    assert_memory_equal(igot, ivalues, sizeof ivalues);
    free(igot);
    of_tensor_release(back);
    of_tensor_release(gpu);
  } else {
    ASSERT_STATUS(of_tensor_copy_to_device(i64, OF_DEVICE_CUDA, 0, &none), OF_STATUS_UNAVAILABLE,
                  "of_tensor_copy_to_device", "cuda:0");
    assert_ptr_equal(none, SENTINEL_PTR(of_tensor_t*));
  }
  of_tensor_release(i64);
  of_tensor_release(copy);
}

/* The CPU allocator's counters follow a tensor's life; older (smaller) structs get only their fields. */
static void test_device_memory_stats(void** state) {
  of_session_t* s = (of_session_t*)*state;
  of_device_memory_stats_t before, during, after;
  before.struct_size = during.struct_size = after.struct_size = sizeof(of_device_memory_stats_t);
  ASSERT_OK(of_device_memory_stats(OF_DEVICE_CPU, 0, &before));
  assert_int_equal(before.struct_size, sizeof(of_device_memory_stats_t));
  const int64_t dims[] = {1 << 18}; /* 1 MiB of float32 */
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float32(), dims, 1, NULL, &t));
  ASSERT_OK(of_device_memory_stats(OF_DEVICE_CPU, 0, &during));
  assert_true(during.bytes_in_use >= before.bytes_in_use + (1u << 20));
  assert_true(during.peak_bytes_in_use >= during.bytes_in_use);
  assert_true(during.bytes_reserved >= during.bytes_in_use);
  assert_true(during.peak_bytes_reserved >= during.bytes_reserved);
  assert_true(during.allocations > before.allocations);
  assert_true(during.bytes_cached <= during.bytes_reserved);
  of_tensor_release(t);
  ASSERT_OK(of_device_empty_cache(OF_DEVICE_CPU, 0));
  ASSERT_OK(of_device_memory_stats(OF_DEVICE_CPU, 0, &after));
  assert_int_equal(after.bytes_in_use, before.bytes_in_use);
  assert_int_equal(after.bytes_cached, 0);
  assert_true(after.device_frees >= before.device_frees);
  assert_int_equal(after.out_of_memory, before.out_of_memory);

  /* A failed allocation is counted, and the device keeps working. */
  const int64_t huge[] = {(int64_t)1 << 40, (int64_t)1 << 20};
  of_tensor_t* none = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_empty(s, of_dtype_float32(), huge, 2, NULL, &none), OF_STATUS_RESOURCE_EXHAUSTED,
                "of_tensor_empty");
  ASSERT_OK(of_device_memory_stats(OF_DEVICE_CPU, 0, &after));
  assert_int_equal(after.out_of_memory, before.out_of_memory + 1);
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float32(), dims, 1, NULL, &t));
  of_tensor_release(t);

  /* A caller built against an older header: only the fields its struct has are written. */
  unsigned char raw[sizeof(of_device_memory_stats_t)];
  memset(raw, 0xab, sizeof raw);
  of_device_memory_stats_t* part = (of_device_memory_stats_t*)(void*)raw;
  part->struct_size = offsetof(of_device_memory_stats_t, bytes_reserved);
  ASSERT_OK(of_device_memory_stats(OF_DEVICE_CPU, 0, part));
  assert_int_equal(part->struct_size, offsetof(of_device_memory_stats_t, bytes_reserved));
  for (size_t i = offsetof(of_device_memory_stats_t, bytes_reserved); i < sizeof raw; ++i) {
    assert_int_equal(raw[i], 0xab);
  }

  /* Errors. */
  part->struct_size = 0;
  ASSERT_STATUS(of_device_memory_stats(OF_DEVICE_CPU, 0, part), OF_STATUS_INVALID_ARGUMENT, "of_device_memory_stats",
                "struct_size");
  ASSERT_STATUS(of_device_memory_stats(OF_DEVICE_CPU, 0, NULL), OF_STATUS_INVALID_ARGUMENT, "of_device_memory_stats",
                "out_stats");
  ASSERT_STATUS(of_device_memory_stats(0, 0, &after), OF_STATUS_INVALID_ARGUMENT, "of_device_memory_stats",
                "device type 0");
  ASSERT_STATUS(of_device_memory_stats(OF_DEVICE_CUDA, 4096, &after), OF_STATUS_UNAVAILABLE, "of_device_memory_stats",
                "cuda:4096");
  ASSERT_STATUS(of_device_empty_cache(OF_DEVICE_CPU, -1), OF_STATUS_INVALID_ARGUMENT, "of_device_empty_cache",
                "negative");
  ASSERT_STATUS(of_device_empty_cache(OF_DEVICE_CUDA, 4096), OF_STATUS_UNAVAILABLE, "of_device_empty_cache",
                "cuda:4096");
}

static void test_retain_release(void** state) {
  of_session_t* s = (of_session_t*)*state;
  of_tensor_retain(NULL);
  of_tensor_release(NULL);
  const int64_t dims[] = {2};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_full(s, of_dtype_int64(), dims, 1, 9, NULL, &t));
  of_tensor_retain(t);
  of_tensor_retain(t);
  of_tensor_release(t);
  of_tensor_release(t);
  /* One reference is left: still usable. */
  int64_t v[2] = {0, 0};
  ASSERT_OK(of_tensor_copy_to_host(t, v, sizeof v));
  assert_int_equal(v[0], 9);
  assert_int_equal(v[1], 9);
  of_tensor_release(t); /* the last one; ASan reports a leak if it is not freed */
}

/*===--- adopt_data ---------------------------------------------------------------------------===*/

typedef struct {
  int calls;
  void* data;
  void* user_data;
} deleter_log;

static void log_deleter(void* data, void* user_data) {
  deleter_log* log = (deleter_log*)user_data;
  log->calls += 1;
  log->data = data;
  log->user_data = user_data;
}

/* Frees malloc'd memory: ASan reports a leak if it never runs and a double free if it runs twice. */
static void free_deleter(void* data, void* user_data) {
  log_deleter(data, user_data);
  free(data);
}

static void test_adopt_release_order(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {2, 2};
  float* buf = malloc(4 * sizeof(float));
  assert_non_null(buf);
  for (int i = 0; i < 4; ++i) buf[i] = (float)i;
  deleter_log log = {0, NULL, NULL};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_float32(), dims, 2, buf, 4 * sizeof(float), free_deleter, &log, &t));
  assert_shape(t, of_dtype_float32(), dims, 2);
  assert_int_equal(log.calls, 0);
  of_tensor_retain(t); /* two references */
  of_tensor_release(t);
  assert_int_equal(log.calls, 0); /* not after the first release */
  float back[4];
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_true(back[3] == 3.0f);
  of_tensor_release(t);
  assert_int_equal(log.calls, 1); /* after the last */
  assert_ptr_equal(log.data, buf);
  assert_ptr_equal(log.user_data, &log);
}

static void test_adopt_no_copy(void** state) {
  of_session_t* s = (of_session_t*)*state;
  _Alignas(64) static int32_t buf[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[] = {6};
  deleter_log log = {0, NULL, NULL};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_int32(), dims, 1, buf, sizeof buf, log_deleter, &log, &t));
  int32_t back[6];
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_memory_equal(back, buf, sizeof buf);
  buf[2] = 300; /* written after adopt: the tensor sees it */
  buf[5] = -1;
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_int_equal(back[2], 300);
  assert_int_equal(back[5], -1);
  int32_t type = 0, index = -1;
  ASSERT_OK(of_tensor_device(t, &type, &index));
  assert_int_equal(type, OF_DEVICE_CPU);
  assert_int_equal(index, 0);
  /* The tensor does not depend on the session... */
  of_tensor_release(t);
  assert_int_equal(log.calls, 1);
  assert_ptr_equal(log.data, buf);
  assert_ptr_equal(log.user_data, &log);
}

static void test_adopt_outlives_session(void** state) {
  (void)state;
  of_session_t* s = of_test_session();
  _Alignas(64) static double buf[2] = {0.5, 1.5};
  const int64_t dims[] = {2};
  deleter_log log = {0, NULL, NULL};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_float64(), dims, 1, buf, sizeof buf, log_deleter, &log, &t));
  of_session_destroy(s);
  assert_int_equal(log.calls, 0);
  double back[2];
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_memory_equal(back, buf, sizeof buf);
  of_tensor_release(t);
  assert_int_equal(log.calls, 1);
}

static void test_adopt_failures_call_deleter_once(void** state) {
  of_session_t* s = (of_session_t*)*state;
  _Alignas(64) static unsigned char buf[64];
  static unsigned char not_bool[4] = {0, 1, 1, 2};
  const int64_t dims[] = {2, 2};
  const int64_t dims_unknown[] = {2, OF_DIM_UNKNOWN};
  const int64_t dims_neg[] = {2, -1};
  const of_dtype_t* f32 = of_dtype_float32();
  struct adopt_case {
    const char* what;
    of_session_t* session;
    const of_dtype_t* dtype;
    const int64_t* dims;
    size_t ndim;
    void* data;
    size_t nbytes;
    int null_out;
    const char* needle1;
    const char* needle2;
  };
  const struct adopt_case cases[] = {
      {"nbytes too small", s, f32, dims, 2, buf, 12, 0, "12", "16"},
      {"nbytes too large", s, f32, dims, 2, buf, 20, 0, "20", "16"},
      {"misaligned float32", s, f32, dims, 2, buf + 1, 16, 0, "aligned", "float32"},
      {"misaligned float64", s, of_dtype_float64(), dims, 2, buf + 4, 32, 0, "aligned", "float64"},
      {"misaligned int16", s, of_dtype_int16(), dims, 2, buf + 3, 8, 0, "aligned", "int16"},
      {"unknown dim", s, f32, dims_unknown, 2, buf, 16, 0, "not concrete", "dim 1"},
      {"negative dim", s, f32, dims_neg, 2, buf, 16, 0, "dims[1]", "-1"},
      {"NULL dims", s, f32, NULL, 2, buf, 16, 0, "dims", "NULL"},
      {"bool byte 2", s, of_dtype_bool(), dims, 2, not_bool, 4, 0, "byte 2", "element 3"},
      {"NULL data", s, f32, dims, 2, NULL, 16, 0, "data", "NULL"},
      {"NULL dtype", s, NULL, dims, 2, buf, 16, 0, "dtype", "NULL"},
      {"NULL session", NULL, f32, dims, 2, buf, 16, 0, "session", "NULL"},
      {"NULL out_tensor", s, f32, dims, 2, buf, 16, 1, "out_tensor", "NULL"},
  };
  for (size_t i = 0; i < OF_ARRAY_SIZE(cases); ++i) {
    const struct adopt_case* c = &cases[i];
    print_message("  %s\n", c->what);
    deleter_log log = {0, NULL, NULL};
    of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
    ASSERT_STATUS(of_tensor_adopt_data(c->session, c->dtype, c->dims, c->ndim, c->data, c->nbytes, log_deleter, &log,
                                       c->null_out ? NULL : &t),
                  OF_STATUS_INVALID_ARGUMENT, "of_tensor_adopt_data", c->needle1, c->needle2);
    assert_int_equal(log.calls, 1); /* exactly once, before the call returned */
    assert_ptr_equal(log.data, c->data);
    assert_ptr_equal(log.user_data, &log);
    assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  }

  /* With a deleter that frees: ASan checks that the memory is released exactly once. */
  deleter_log log = {0, NULL, NULL};
  void* heap = malloc(16);
  assert_non_null(heap);
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  ASSERT_STATUS(of_tensor_adopt_data(s, f32, dims, 2, heap, 8, free_deleter, &log, &t), OF_STATUS_INVALID_ARGUMENT,
                "of_tensor_adopt_data", "8", "16");
  assert_int_equal(log.calls, 1);
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
}

static void test_adopt_alignment_ok(void** state) {
  of_session_t* s = (of_session_t*)*state;
  _Alignas(64) static unsigned char buf[64];
  /* Aligned to the dtype's size is enough. */
  const int64_t dims[] = {4};
  deleter_log log = {0, NULL, NULL};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_int8(), dims, 1, buf + 1, 4, log_deleter, &log, &t));
  of_tensor_release(t);
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_float32(), dims, 1, buf + 4, 16, log_deleter, &log, &t));
  of_tensor_release(t);
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_float16(), dims, 1, buf + 2, 8, log_deleter, &log, &t));
  of_tensor_release(t);
  assert_int_equal(log.calls, 3);
  assert_ptr_equal(log.data, buf + 2);
}

static void test_adopt_null_deleter(void** state) {
  of_session_t* s = (of_session_t*)*state;
  _Alignas(64) static float buf[3] = {1, 2, 3};
  const int64_t dims[] = {3};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_float32(), dims, 1, buf, sizeof buf, NULL, NULL, &t));
  float back[3];
  ASSERT_OK(of_tensor_copy_to_host(t, back, sizeof back));
  assert_memory_equal(back, buf, sizeof buf);
  of_tensor_release(t);
  /* Failures with no deleter. */
  ASSERT_STATUS(of_tensor_adopt_data(s, of_dtype_float32(), dims, 1, buf, 4, NULL, NULL, &t),
                OF_STATUS_INVALID_ARGUMENT, "of_tensor_adopt_data", "4", "12");
  ASSERT_STATUS(of_tensor_adopt_data(NULL, of_dtype_float32(), dims, 1, buf, sizeof buf, NULL, NULL, &t),
                OF_STATUS_INVALID_ARGUMENT, "of_tensor_adopt_data", "session");
  assert_true(buf[0] == 1.0f); /* the memory is the caller's */
}

static void test_adopt_zero_size(void** state) {
  of_session_t* s = (of_session_t*)*state;
  const int64_t dims[] = {0, 5};
  deleter_log log = {0, NULL, NULL};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_float32(), dims, 2, NULL, 0, log_deleter, &log, &t));
  assert_shape(t, of_dtype_float32(), dims, 2);
  assert_int_equal(log.calls, 0);
  of_tensor_release(t);
  assert_int_equal(log.calls, 1);
  assert_null(log.data);
  assert_ptr_equal(log.user_data, &log);

  /* A 0-d adopted tensor. */
  _Alignas(8) static int64_t scalar = 42;
  ASSERT_OK(of_tensor_adopt_data(s, of_dtype_int64(), NULL, 0, &scalar, sizeof scalar, log_deleter, &log, &t));
  int64_t back = 0;
  ASSERT_OK(of_tensor_copy_to_host(t, &back, sizeof back));
  assert_int_equal(back, 42);
  of_tensor_release(t);
  assert_int_equal(log.calls, 2);
  assert_ptr_equal(log.data, &scalar);
}

int main(void) {
#define WITH_SESSION(f) cmocka_unit_test_setup_teardown(f, of_test_setup_session, of_test_teardown_session)
  const struct CMUnitTest tests[] = {
      WITH_SESSION(test_from_data_each_dtype),
      WITH_SESSION(test_from_data_copies),
      WITH_SESSION(test_queries_3d),
      WITH_SESSION(test_dims_capacity),
      WITH_SESSION(test_query_errors),
      WITH_SESSION(test_zero_d),
      WITH_SESSION(test_zero_size_dim),
      WITH_SESSION(test_from_data_wrong_nbytes),
      WITH_SESSION(test_from_data_null_data),
      WITH_SESSION(test_creation_errors),
      WITH_SESSION(test_huge_shapes_fail_cleanly),
      WITH_SESSION(test_zeros_ones_each_dtype),
      WITH_SESSION(test_full_values),
      WITH_SESSION(test_full_unrepresentable),
      WITH_SESSION(test_empty),
      WITH_SESSION(test_bool_bytes_are_0_or_1),
      WITH_SESSION(test_rand_uniform),
      WITH_SESSION(test_randn_normal),
      cmocka_unit_test(test_rand_reproducible),
      WITH_SESSION(test_rand_non_floating),
      cmocka_unit_test(test_rand_failure_keeps_generator),
      cmocka_unit_test(test_rand_device_failure_keeps_generator),
      cmocka_unit_test(test_rand_out_of_memory_keeps_generator),
      WITH_SESSION(test_arange_values),
      WITH_SESSION(test_arange_errors),
      WITH_SESSION(test_tensor_options),
      WITH_SESSION(test_tensor_options_cuda),
      WITH_SESSION(test_copy_to_host_errors),
      WITH_SESSION(test_copy_to_device),
      WITH_SESSION(test_device_memory_stats),
      WITH_SESSION(test_retain_release),
      WITH_SESSION(test_adopt_release_order),
      WITH_SESSION(test_adopt_no_copy),
      cmocka_unit_test(test_adopt_outlives_session),
      WITH_SESSION(test_adopt_failures_call_deleter_once),
      WITH_SESSION(test_adopt_alignment_ok),
      WITH_SESSION(test_adopt_null_deleter),
      WITH_SESSION(test_adopt_zero_size),
  };
#undef WITH_SESSION
  return cmocka_run_group_tests_name("capi.tensor", tests, NULL, NULL);
}
