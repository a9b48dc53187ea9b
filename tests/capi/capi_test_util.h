/* Shared helpers of the CMocka tests of the C ABI (tests/capi). Only the public header is used, as a
 * user of liboneflow_c would. Every helper that receives a status frees it. */
#ifndef ONEFLOW_CAPI_TEST_UTIL_H_
#define ONEFLOW_CAPI_TEST_UTIL_H_

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "oneflow/oneflow_c.h"

/* The AddressSanitizer build must let a huge allocation fail with NULL (as glibc does) rather than
 * abort: the library must report it as RESOURCE_EXHAUSTED. protect_shadow_gap=0 lets the CUDA runtime
 * map device memory under ASan where a GPU exists. Unused in other builds; ASAN_OPTIONS overrides. */
__attribute__((visibility("default"), used)) const char* __asan_default_options(void);
__attribute__((visibility("default"), used)) const char* __asan_default_options(void) {
  return "allocator_may_return_null=1:protect_shadow_gap=0";
}

#define OF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A pointer value that no library call returns; used to check that outputs are left untouched. */
__attribute__((unused)) static char of_test_sentinel_byte;
#define SENTINEL_PTR(type) ((type)(void*)&of_test_sentinel_byte)

/* Fails the test (at the caller's line) unless `status` is NULL; prints and frees the status. */
static inline void of_test_assert_ok(of_status_t* status, const char* expr, const char* file, int line) {
  if (status == NULL) return;
  print_error("%s failed: %s: %s\n", expr, of_status_code_name(of_status_code(status)), of_status_message(status));
  of_status_destroy(status);
  _fail(file, line);
}
#define ASSERT_OK(expr) of_test_assert_ok((expr), #expr, __FILE__, __LINE__)

static inline int of_test_is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* 1 if `needle` occurs in `haystack` as a whole word: where the needle begins (ends) with a letter,
 * digit or '_', the character before (after) it must not be one. So "tensor" matches
 * "argument 'tensor' is NULL" but not "of_tensor_dims", and "12" does not match "120". */
static inline int of_test_contains_word(const char* haystack, const char* needle) {
  const size_t n = strlen(needle);
  if (n == 0) return 1;
  for (const char* p = strstr(haystack, needle); p != NULL; p = strstr(p + 1, needle)) {
    const int starts_ok = !of_test_is_word_char(needle[0]) || p == haystack || !of_test_is_word_char(p[-1]);
    const int ends_ok = !of_test_is_word_char(needle[n - 1]) || !of_test_is_word_char(p[n]);
    if (starts_ok && ends_ok) return 1;
  }
  return 0;
}

/* Fails the test unless `status` is an error with `code` whose message contains every string of the
 * NULL-terminated list `needles` as a whole word (of_test_contains_word); frees the status in every
 * case. */
static inline void of_test_assert_status(of_status_t* status, of_status_code_t code, const char* const* needles,
                                  const char* expr, const char* file, int line) {
  if (status == NULL) {
    print_error("%s succeeded, expected %s\n", expr, of_status_code_name(code));
    _fail(file, line);
    return;
  }
  const of_status_code_t got = of_status_code(status);
  const char* message = of_status_message(status);
  int ok = 1;
  if (got != code) {
    print_error("%s: expected status %s (%d), got %s (%d): \"%s\"\n", expr, of_status_code_name(code), (int)code,
                of_status_code_name(got), (int)got, message);
    ok = 0;
  }
  if (message == NULL || message[0] == '\0') {
    print_error("%s: the status message is empty\n", expr);
    ok = 0;
  }
  for (const char* const* n = needles; ok && *n != NULL; ++n) {
    if (!of_test_contains_word(message, *n)) {
      print_error("%s: the message \"%s\" does not contain the word \"%s\"\n", expr, message, *n);
      ok = 0;
    }
  }
  of_status_destroy(status);
  if (!ok) _fail(file, line);
}
/* ASSERT_STATUS(call, OF_STATUS_INVALID_ARGUMENT, "of_tensor_zeros", "dims[1]") */
#define ASSERT_STATUS(expr, code, ...) \
  of_test_assert_status((expr), (code), (const char* const[]){__VA_ARGS__, NULL}, #expr, __FILE__, __LINE__)

/* Like ASSERT_STATUS but accepts either of two codes (e.g. UNAVAILABLE or UNIMPLEMENTED). */
static inline void of_test_assert_status2(of_status_t* status, of_status_code_t code1, of_status_code_t code2,
                                   const char* const* needles, const char* expr, const char* file, int line) {
  if (status != NULL && of_status_code(status) == code2) code1 = code2;
  of_test_assert_status(status, code1, needles, expr, file, line);
}
#define ASSERT_STATUS2(expr, code1, code2, ...)                                                              \
  of_test_assert_status2((expr), (code1), (code2), (const char* const[]){__VA_ARGS__, NULL}, #expr, __FILE__, \
                         __LINE__)

/* A CPU session with the default options; fails the test if it cannot be made. */
static inline of_session_t* of_test_session(void) {
  of_session_t* session = NULL;
  ASSERT_OK(of_session_create(NULL, &session));
  assert_non_null(session);
  return session;
}

static inline of_session_t* of_test_session_seeded(uint64_t seed) {
  of_session_options_t options;
  of_session_options_init(&options);
  options.seed = seed;
  of_session_t* session = NULL;
  ASSERT_OK(of_session_create(&options, &session));
  assert_non_null(session);
  return session;
}

/* NULL if this build and machine can make a CUDA session (a GPU is present); else the status saying
 * why not, which the caller frees. */
static inline of_status_t* of_test_cuda_probe(void) {
  of_session_options_t options;
  of_session_options_init(&options);
  options.device_type = OF_DEVICE_CUDA;
  of_session_t* session = NULL;
  of_status_t* s = of_session_create(&options, &session);
  of_session_destroy(session);
  return s;
}

/* 1 if this build and machine can make a CUDA session (a GPU is present), else 0. */
static inline int of_test_cuda_available(void) {
  of_status_t* s = of_test_cuda_probe();
  const int available = s == NULL;
  of_status_destroy(s);
  return available;
}

/* cmocka setup/teardown that keep a session in *state. */
static inline int of_test_setup_session(void** state) {
  of_session_t* session = NULL;
  of_status_t* s = of_session_create(NULL, &session);
  if (s != NULL) {
    of_status_destroy(s);
    return -1;
  }
  *state = session;
  return 0;
}
static inline int of_test_teardown_session(void** state) {
  of_session_destroy((of_session_t*)*state);
  *state = NULL;
  return 0;
}

/* The 10 dtypes, in code order (codes 1..10). */
typedef const of_dtype_t* (*of_test_dtype_getter)(void);
__attribute__((unused)) static const of_test_dtype_getter of_test_dtype_getters[] = {
    of_dtype_bool,    of_dtype_int8,     of_dtype_uint8,   of_dtype_int16,   of_dtype_int32,
    of_dtype_int64,   of_dtype_float16,  of_dtype_bfloat16, of_dtype_float32, of_dtype_float64,
};
#define OF_TEST_NUM_DTYPES 10

/* A copy of the tensor's bytes (caller frees) and its size. */
static inline void* of_test_read_all(const of_tensor_t* tensor, size_t* out_nbytes) {
  size_t nbytes = 0;
  ASSERT_OK(of_tensor_nbytes(tensor, &nbytes));
  void* buf = malloc(nbytes == 0 ? 1 : nbytes);
  assert_non_null(buf);
  ASSERT_OK(of_tensor_copy_to_host(tensor, buf, nbytes));
  if (out_nbytes != NULL) *out_nbytes = nbytes;
  return buf;
}

/* Fails unless tensors x and y hold the same bytes (same size, same contents). */
static inline void of_test_assert_same_bytes(const of_tensor_t* x, const of_tensor_t* y) {
  size_t nx = 0, ny = 0;
  void* bx = of_test_read_all(x, &nx);
  void* by = of_test_read_all(y, &ny);
  assert_int_equal(nx, ny);
  assert_memory_equal(bx, by, nx);
  free(bx);
  free(by);
}

/* Fails unless sessions a and b draw the same next `n` float32 rand values: their generators are in
 * the same state. */
static inline void of_test_assert_same_next_rand(of_session_t* a, of_session_t* b, int64_t n) {
  of_tensor_t* ta = NULL;
  of_tensor_t* tb = NULL;
  ASSERT_OK(of_tensor_rand(a, of_dtype_float32(), &n, 1, NULL, &ta));
  ASSERT_OK(of_tensor_rand(b, of_dtype_float32(), &n, 1, NULL, &tb));
  of_test_assert_same_bytes(ta, tb);
  of_tensor_release(ta);
  of_tensor_release(tb);
}

/* IEEE binary16 and bfloat16 bit patterns to float (the test's own decoders). */
static inline float of_test_bf16_to_float(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
static inline float of_test_f16_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  float value;
  if (exp == 0) {
    value = ldexpf((float)mant, -24);
  } else if (exp == 31) {
    value = mant == 0 ? INFINITY : NAN;
  } else {
    value = ldexpf((float)(mant + 1024), exp - 25);
  }
  return (h & 0x8000u) ? -value : value;
}

#endif /* ONEFLOW_CAPI_TEST_UTIL_H_ */
