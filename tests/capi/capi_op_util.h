/* Helpers of the op and autograd tests of the C ABI: tensors from double literals and a comparison
 * of a tensor's dtype, shape and values with expected ones written in the test. */
#ifndef ONEFLOW_CAPI_OP_UTIL_H_
#define ONEFLOW_CAPI_OP_UTIL_H_

#include "capi_test_util.h"

/* DIMS(2, 3) and VALS(1, 2, 3) expand to (pointer, count) argument pairs; DIMS0 is the 0-d shape. */
#define DIMS(...) (const int64_t[]){__VA_ARGS__}, OF_ARRAY_SIZE(((const int64_t[]){__VA_ARGS__}))
#define DIMS0 NULL, 0
#define VALS(...) (const double[]){__VA_ARGS__}, OF_ARRAY_SIZE(((const double[]){__VA_ARGS__}))

#define F32 of_dtype_float32()
#define F64 of_dtype_float64()
#define I64 of_dtype_int64()
#define I32 of_dtype_int32()
#define BOOL of_dtype_bool()

#define OUT_SENTINEL SENTINEL_PTR(of_tensor_t*)

/* Element `i` of a host buffer of dtype `code`, as a double. */
static inline double of_test_load(int32_t code, const void* data, size_t i) {
  switch (code) {
    case OF_DTYPE_BOOL: return ((const uint8_t*)data)[i];
    case OF_DTYPE_INT8: return ((const int8_t*)data)[i];
    case OF_DTYPE_UINT8: return ((const uint8_t*)data)[i];
    case OF_DTYPE_INT16: return ((const int16_t*)data)[i];
    case OF_DTYPE_INT32: return ((const int32_t*)data)[i];
    case OF_DTYPE_INT64: return (double)((const int64_t*)data)[i];
    case OF_DTYPE_FLOAT16: return of_test_f16_to_float(((const uint16_t*)data)[i]);
    case OF_DTYPE_BFLOAT16: return of_test_bf16_to_float(((const uint16_t*)data)[i]);
    case OF_DTYPE_FLOAT32: return ((const float*)data)[i];
    case OF_DTYPE_FLOAT64: return ((const double*)data)[i];
    default: fail_msg("no loader for dtype code %d", (int)code); return 0;
  }
}

static inline void of_test_store(int32_t code, void* data, size_t i, double v) {
  switch (code) {
    case OF_DTYPE_BOOL: ((uint8_t*)data)[i] = v != 0; break;
    case OF_DTYPE_INT8: ((int8_t*)data)[i] = (int8_t)v; break;
    case OF_DTYPE_UINT8: ((uint8_t*)data)[i] = (uint8_t)v; break;
    case OF_DTYPE_INT16: ((int16_t*)data)[i] = (int16_t)v; break;
    case OF_DTYPE_INT32: ((int32_t*)data)[i] = (int32_t)v; break;
    case OF_DTYPE_INT64: ((int64_t*)data)[i] = (int64_t)v; break;
    case OF_DTYPE_FLOAT32: ((float*)data)[i] = (float)v; break;
    case OF_DTYPE_FLOAT64: ((double*)data)[i] = v; break;
    default: fail_msg("no storer for dtype code %d", (int)code);
  }
}

/* A new tensor of `dtype` and shape (dims, ndim) holding `values` (n of them, row-major):
 * make_tensor(session, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)). */
static inline of_tensor_t* make_tensor(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                       size_t ndim, const double* values, size_t n) {
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) numel *= dims[i];
  assert_int_equal(numel, (int64_t)n);
  const size_t nbytes = n * of_dtype_size(dtype);
  void* buf = malloc(nbytes == 0 ? 1 : nbytes);
  assert_non_null(buf);
  for (size_t i = 0; i < n; ++i) of_test_store(of_dtype_code(dtype), buf, i, values[i]);
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(session, dtype, dims, ndim, buf, nbytes, NULL, &t));
  free(buf);
  return t;
}

/* The tensor's elements as doubles; the caller frees the array. */
static inline double* of_test_values(const of_tensor_t* t, size_t* out_n) {
  const of_dtype_t* dtype = NULL;
  ASSERT_OK(of_tensor_dtype(t, &dtype));
  int64_t numel = 0;
  ASSERT_OK(of_tensor_numel(t, &numel));
  void* raw = of_test_read_all(t, NULL);
  double* values = malloc(sizeof(double) * (numel == 0 ? 1 : (size_t)numel));
  assert_non_null(values);
  for (int64_t i = 0; i < numel; ++i) values[i] = of_test_load(of_dtype_code(dtype), raw, (size_t)i);
  free(raw);
  *out_n = (size_t)numel;
  return values;
}

/* Fails at (file, line) unless t has `dtype`, shape (dims, ndim) and values within
 * tol * max(1, |expected|) of `expected` (NaN matches NaN). */
static inline void of_test_expect_tensor(const char* file, int line, const of_tensor_t* t, const of_dtype_t* dtype,
                                         const int64_t* dims, size_t ndim, const double* expected, size_t n,
                                         double tol) {
  if (t == NULL) {
    print_error("the tensor is NULL\n");
    _fail(file, line);
    return;
  }
  const of_dtype_t* got_dtype = NULL;
  ASSERT_OK(of_tensor_dtype(t, &got_dtype));
  if (got_dtype != dtype) {
    print_error("dtype %s, expected %s\n", of_dtype_name(got_dtype), of_dtype_name(dtype));
    _fail(file, line);
  }
  size_t got_ndim = 0;
  ASSERT_OK(of_tensor_ndim(t, &got_ndim));
  int64_t got_dims[16] = {0};
  assert_true(got_ndim <= 16);
  ASSERT_OK(of_tensor_dims(t, got_dims, 16));
  int shape_ok = got_ndim == ndim;
  for (size_t i = 0; shape_ok && i < ndim; ++i) shape_ok = got_dims[i] == dims[i];
  if (!shape_ok) {
    print_error("shape (");
    for (size_t i = 0; i < got_ndim; ++i) print_error("%s%lld", i ? ", " : "", (long long)got_dims[i]);
    print_error("), expected (");
    for (size_t i = 0; i < ndim; ++i) print_error("%s%lld", i ? ", " : "", (long long)dims[i]);
    print_error(")\n");
    _fail(file, line);
  }
  size_t got_n = 0;
  double* got = of_test_values(t, &got_n);
  int ok = got_n == n;
  for (size_t i = 0; ok && i < n; ++i) {
    const double e = expected[i];
    const double g = got[i];
    const int both_nan = isnan(e) && isnan(g);
    const double bound = tol * (fabs(e) > 1 ? fabs(e) : 1);
    if (!both_nan && !(fabs(g - e) <= bound) && !(g == e)) {
      print_error("element %zu is %.9g, expected %.9g (tolerance %g)\n", i, g, e, bound);
      ok = 0;
    }
  }
  if (got_n != n) print_error("%zu elements, expected %zu\n", got_n, n);
  free(got);
  if (!ok) _fail(file, line);
}
/* EXPECT_TENSOR(t, F32, DIMS(2), VALS(1, 2), 1e-6) */
#define EXPECT_TENSOR(t, ...) of_test_expect_tensor(__FILE__, __LINE__, (t), __VA_ARGS__)

/* The value of a one-element tensor, as a double. */
static inline double of_test_item(const of_tensor_t* t) {
  size_t n = 0;
  double* v = of_test_values(t, &n);
  assert_int_equal(n, 1);
  const double x = v[0];
  free(v);
  return x;
}

/* Runs `call`, which writes its result into the tensor `r`, checks r against the expectation in the
 * remaining arguments (as EXPECT_TENSOR) and releases it. */
#define OP_EXPECT(call, ...)        \
  do {                              \
    of_tensor_t* r = NULL;          \
    ASSERT_OK(call);                \
    EXPECT_TENSOR(r, __VA_ARGS__); \
    of_tensor_release(r);           \
  } while (0)

/* Fails unless `call` fails with `code` and the words, leaving the tensor `r` untouched. */
#define OP_FAILS(call, code, ...)                     \
  do {                                                \
    of_tensor_t* r = OUT_SENTINEL;                    \
    ASSERT_STATUS(call, code, __VA_ARGS__);           \
    assert_ptr_equal(r, OUT_SENTINEL);                \
  } while (0)

#endif /* ONEFLOW_CAPI_OP_UTIL_H_ */
