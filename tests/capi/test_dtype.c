/* Dtypes: interning (pointer identity across every function that returns a dtype), attributes,
 * lookups by code / name / DLPack, and type promotion. */
#include "capi_test_util.h"

typedef struct {
  of_test_dtype_getter get;
  int32_t code;
  const char* name;
  size_t size;
  int32_t is_floating_point;
  int32_t is_signed;
  int32_t is_integer;
  uint8_t dl_code;
  uint8_t dl_bits;
} dtype_row;

/* DLPack codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6. */
static const dtype_row kTable[OF_TEST_NUM_DTYPES] = {
    {of_dtype_bool, OF_DTYPE_BOOL, "bool", 1, 0, 0, 0, 6, 8},
    {of_dtype_int8, OF_DTYPE_INT8, "int8", 1, 0, 1, 1, 0, 8},
    {of_dtype_uint8, OF_DTYPE_UINT8, "uint8", 1, 0, 0, 1, 1, 8},
    {of_dtype_int16, OF_DTYPE_INT16, "int16", 2, 0, 1, 1, 0, 16},
    {of_dtype_int32, OF_DTYPE_INT32, "int32", 4, 0, 1, 1, 0, 32},
    {of_dtype_int64, OF_DTYPE_INT64, "int64", 8, 0, 1, 1, 0, 64},
    {of_dtype_float16, OF_DTYPE_FLOAT16, "float16", 2, 1, 1, 0, 2, 16},
    {of_dtype_bfloat16, OF_DTYPE_BFLOAT16, "bfloat16", 2, 1, 1, 0, 4, 16},
    {of_dtype_float32, OF_DTYPE_FLOAT32, "float32", 4, 1, 1, 0, 2, 32},
    {of_dtype_float64, OF_DTYPE_FLOAT64, "float64", 8, 1, 1, 0, 2, 64},
};

static void test_dtype_code_values(void** state) {
  (void)state;
  assert_int_equal(OF_DTYPE_INVALID, 0);
  for (int32_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) assert_int_equal(kTable[i].code, i + 1);
  assert_int_equal(OF_DTYPE_FLOAT64, 10);
}

static void test_getters_are_interned(void** state) {
  (void)state;
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* d = kTable[i].get();
    assert_non_null(d);
    for (int rep = 0; rep < 3; ++rep) assert_ptr_equal(kTable[i].get(), d);
    for (size_t j = 0; j < i; ++j) assert_ptr_not_equal(kTable[j].get(), d);
  }
}

static void test_attributes(void** state) {
  (void)state;
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const dtype_row* r = &kTable[i];
    const of_dtype_t* d = r->get();
    assert_int_equal(of_dtype_code(d), r->code);
    assert_non_null(of_dtype_name(d));
    assert_string_equal(of_dtype_name(d), r->name);
    assert_ptr_equal(of_dtype_name(d), of_dtype_name(d)); /* static */
    assert_int_equal(of_dtype_size(d), r->size);
    assert_int_equal(of_dtype_is_floating_point(d), r->is_floating_point);
    assert_int_equal(of_dtype_is_signed(d), r->is_signed);
    assert_int_equal(of_dtype_is_integer(d), r->is_integer);
    assert_int_equal(of_dtype_is_complex(d), 0);
  }
}

static void test_null_attributes(void** state) {
  (void)state;
  assert_int_equal(of_dtype_code(NULL), OF_DTYPE_INVALID);
  assert_non_null(of_dtype_name(NULL));
  assert_string_equal(of_dtype_name(NULL), "");
  assert_int_equal(of_dtype_size(NULL), 0);
  assert_int_equal(of_dtype_is_floating_point(NULL), 0);
  assert_int_equal(of_dtype_is_signed(NULL), 0);
  assert_int_equal(of_dtype_is_integer(NULL), 0);
  assert_int_equal(of_dtype_is_complex(NULL), 0);
}

static void test_from_code(void** state) {
  (void)state;
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* d = NULL;
    ASSERT_OK(of_dtype_from_code(kTable[i].code, &d));
    assert_ptr_equal(d, kTable[i].get());
  }
}

static void test_from_code_invalid(void** state) {
  (void)state;
  const struct {
    int32_t code;
    const char* text;
  } bad[] = {{0, "0"}, {-1, "-1"}, {11, "11"}, {1000, "1000"}, {INT32_MIN, "-2147483648"},
             {INT32_MAX, "2147483647"}};
  for (size_t i = 0; i < OF_ARRAY_SIZE(bad); ++i) {
    const of_dtype_t* d = SENTINEL_PTR(const of_dtype_t*);
    ASSERT_STATUS(of_dtype_from_code(bad[i].code, &d), OF_STATUS_NOT_FOUND, "of_dtype_from_code", bad[i].text);
    assert_ptr_equal(d, SENTINEL_PTR(const of_dtype_t*));
  }
  ASSERT_STATUS(of_dtype_from_code(OF_DTYPE_FLOAT32, NULL), OF_STATUS_INVALID_ARGUMENT, "of_dtype_from_code",
                "out_dtype", "NULL");
}

static void test_from_name(void** state) {
  (void)state;
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* d = NULL;
    ASSERT_OK(of_dtype_from_name(kTable[i].name, &d));
    assert_ptr_equal(d, kTable[i].get());
  }
  const struct {
    const char* alias;
    of_test_dtype_getter get;
  } aliases[] = {{"float", of_dtype_float32}, {"double", of_dtype_float64}, {"half", of_dtype_float16},
                 {"int", of_dtype_int32},     {"long", of_dtype_int64},     {"short", of_dtype_int16}};
  for (size_t i = 0; i < OF_ARRAY_SIZE(aliases); ++i) {
    const of_dtype_t* d = NULL;
    ASSERT_OK(of_dtype_from_name(aliases[i].alias, &d));
    assert_ptr_equal(d, aliases[i].get());
  }
}

static void test_from_name_invalid(void** state) {
  (void)state;
  const char* const bad[] = {"Float32", "float32 ", " float32", "f32", "", "complex64", "invalid", "int128"};
  for (size_t i = 0; i < OF_ARRAY_SIZE(bad); ++i) {
    const of_dtype_t* d = SENTINEL_PTR(const of_dtype_t*);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
    ASSERT_STATUS(of_dtype_from_name(bad[i], &d), OF_STATUS_NOT_FOUND, "of_dtype_from_name", quoted);
    assert_ptr_equal(d, SENTINEL_PTR(const of_dtype_t*));
  }
  const of_dtype_t* d = SENTINEL_PTR(const of_dtype_t*);
  ASSERT_STATUS(of_dtype_from_name(NULL, &d), OF_STATUS_INVALID_ARGUMENT, "of_dtype_from_name", "name", "NULL");
  assert_ptr_equal(d, SENTINEL_PTR(const of_dtype_t*));
  ASSERT_STATUS(of_dtype_from_name("float32", NULL), OF_STATUS_INVALID_ARGUMENT, "of_dtype_from_name", "out_dtype",
                "NULL");
}

static void test_dlpack_round_trip(void** state) {
  (void)state;
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* d = kTable[i].get();
    uint8_t code = 0xee, bits = 0xee;
    uint16_t lanes = 0xeeee;
    ASSERT_OK(of_dtype_to_dlpack(d, &code, &bits, &lanes));
    assert_int_equal(code, kTable[i].dl_code);
    assert_int_equal(bits, kTable[i].dl_bits);
    assert_int_equal(lanes, 1);
    assert_int_equal(bits, 8 * kTable[i].size);
    const of_dtype_t* back = NULL;
    ASSERT_OK(of_dtype_from_dlpack(code, bits, lanes, &back));
    assert_ptr_equal(back, d);
  }
}

static void test_from_dlpack_invalid(void** state) {
  (void)state;
  const struct {
    uint8_t code, bits;
    uint16_t lanes;
  } bad[] = {
      {2, 32, 2},  /* float32x2 */
      {2, 32, 0},  /* zero lanes */
      {0, 8, 4},   /* int8x4 */
      {3, 32, 1},  /* kDLOpaqueHandle */
      {5, 64, 1},  /* kDLComplex */
      {2, 8, 1},   /* 8-bit float */
      {0, 128, 1}, /* int128 */
      {1, 16, 1},  /* uint16 */
      {6, 1, 1},   /* 1-bit bool */
      {4, 32, 1},  /* 32-bit bfloat */
      {99, 32, 1}, /* unknown code */
  };
  for (size_t i = 0; i < OF_ARRAY_SIZE(bad); ++i) {
    const of_dtype_t* d = SENTINEL_PTR(const of_dtype_t*);
    ASSERT_STATUS(of_dtype_from_dlpack(bad[i].code, bad[i].bits, bad[i].lanes, &d), OF_STATUS_NOT_FOUND,
                  "of_dtype_from_dlpack");
    assert_ptr_equal(d, SENTINEL_PTR(const of_dtype_t*));
  }
  ASSERT_STATUS(of_dtype_from_dlpack(2, 32, 2, NULL), OF_STATUS_INVALID_ARGUMENT, "of_dtype_from_dlpack",
                "out_dtype");
  ASSERT_STATUS(of_dtype_from_dlpack(2, 32, 1, NULL), OF_STATUS_INVALID_ARGUMENT, "of_dtype_from_dlpack",
                "out_dtype");
}

static void test_to_dlpack_errors(void** state) {
  (void)state;
  uint8_t code = 0xee, bits = 0xee;
  uint16_t lanes = 0xeeee;
  ASSERT_STATUS(of_dtype_to_dlpack(NULL, &code, &bits, &lanes), OF_STATUS_INVALID_ARGUMENT, "of_dtype_to_dlpack",
                "dtype", "NULL");
  assert_int_equal(code, 0xee);
  assert_int_equal(bits, 0xee);
  assert_int_equal(lanes, 0xeeee);

  const of_dtype_t* f = of_dtype_float32();
  ASSERT_STATUS(of_dtype_to_dlpack(f, NULL, &bits, &lanes), OF_STATUS_INVALID_ARGUMENT, "of_dtype_to_dlpack",
                "out_code");
  ASSERT_STATUS(of_dtype_to_dlpack(f, &code, NULL, &lanes), OF_STATUS_INVALID_ARGUMENT, "of_dtype_to_dlpack",
                "out_bits");
  ASSERT_STATUS(of_dtype_to_dlpack(f, &code, &bits, NULL), OF_STATUS_INVALID_ARGUMENT, "of_dtype_to_dlpack",
                "out_lanes");
  /* Nothing was written by the failed calls. */
  assert_int_equal(code, 0xee);
  assert_int_equal(bits, 0xee);
  assert_int_equal(lanes, 0xeeee);
}

/* Expected promotion results by code (rows a, columns b; index = code - 1). */
enum { B1 = 1, I1, U1, I2, I4, I8, F2, BF, F4, F8 };
static const int32_t kPromotion[10][10] = {
    /*        b1  i1  u1  i2  i4  i8  f2  bf  f4  f8 */
    /* b1 */ {B1, I1, U1, I2, I4, I8, F2, BF, F4, F8},
    /* i1 */ {I1, I1, I2, I2, I4, I8, F2, BF, F4, F8},
    /* u1 */ {U1, I2, U1, I2, I4, I8, F2, BF, F4, F8},
    /* i2 */ {I2, I2, I2, I2, I4, I8, F2, BF, F4, F8},
    /* i4 */ {I4, I4, I4, I4, I4, I8, F2, BF, F4, F8},
    /* i8 */ {I8, I8, I8, I8, I8, I8, F2, BF, F4, F8},
    /* f2 */ {F2, F2, F2, F2, F2, F2, F2, F4, F4, F8},
    /* bf */ {BF, BF, BF, BF, BF, BF, F4, BF, F4, F8},
    /* f4 */ {F4, F4, F4, F4, F4, F4, F4, F4, F4, F8},
    /* f8 */ {F8, F8, F8, F8, F8, F8, F8, F8, F8, F8},
};

static void test_promote_matrix(void** state) {
  (void)state;
  for (int32_t a = 0; a < 10; ++a) {
    for (int32_t b = 0; b < 10; ++b) {
      const of_dtype_t* out = NULL;
      ASSERT_OK(of_dtype_promote(kTable[a].get(), kTable[b].get(), &out));
      if (out != kTable[kPromotion[a][b] - 1].get()) {
        fail_msg("promote(%s, %s) = %s, expected %s", kTable[a].name, kTable[b].name, of_dtype_name(out),
                 kTable[kPromotion[a][b] - 1].name);
      }
      /* Symmetric, and the same pointer on every call. */
      const of_dtype_t* again = NULL;
      ASSERT_OK(of_dtype_promote(kTable[b].get(), kTable[a].get(), &again));
      assert_ptr_equal(again, out);
    }
  }
}

static void test_promote_errors(void** state) {
  (void)state;
  const of_dtype_t* out = SENTINEL_PTR(const of_dtype_t*);
  ASSERT_STATUS(of_dtype_promote(NULL, of_dtype_int32(), &out), OF_STATUS_INVALID_ARGUMENT, "of_dtype_promote",
                "'a'", "NULL");
  ASSERT_STATUS(of_dtype_promote(of_dtype_int32(), NULL, &out), OF_STATUS_INVALID_ARGUMENT, "of_dtype_promote",
                "'b'", "NULL");
  ASSERT_STATUS(of_dtype_promote(NULL, NULL, &out), OF_STATUS_INVALID_ARGUMENT, "of_dtype_promote");
  assert_ptr_equal(out, SENTINEL_PTR(const of_dtype_t*));
  ASSERT_STATUS(of_dtype_promote(of_dtype_int32(), of_dtype_int8(), NULL), OF_STATUS_INVALID_ARGUMENT,
                "of_dtype_promote", "out_dtype");
}

static void test_tensor_dtype_identity(void** state) {
  of_session_t* session = (of_session_t*)*state;
  const int64_t dims[] = {2};
  for (size_t i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    of_tensor_t* t = NULL;
    ASSERT_OK(of_tensor_zeros(session, kTable[i].get(), dims, 1, NULL, &t));
    const of_dtype_t* d = NULL;
    ASSERT_OK(of_tensor_dtype(t, &d));
    const of_dtype_t* by_code = NULL;
    const of_dtype_t* by_name = NULL;
    const of_dtype_t* by_dlpack = NULL;
    const of_dtype_t* promoted = NULL;
    ASSERT_OK(of_dtype_from_code(kTable[i].code, &by_code));
    ASSERT_OK(of_dtype_from_name(kTable[i].name, &by_name));
    ASSERT_OK(of_dtype_from_dlpack(kTable[i].dl_code, kTable[i].dl_bits, 1, &by_dlpack));
    ASSERT_OK(of_dtype_promote(d, d, &promoted));
    assert_ptr_equal(d, kTable[i].get());
    assert_ptr_equal(by_code, d);
    assert_ptr_equal(by_name, d);
    assert_ptr_equal(by_dlpack, d);
    assert_ptr_equal(promoted, d);
    of_tensor_release(t);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_code_values),
      cmocka_unit_test(test_getters_are_interned),
      cmocka_unit_test(test_attributes),
      cmocka_unit_test(test_null_attributes),
      cmocka_unit_test(test_from_code),
      cmocka_unit_test(test_from_code_invalid),
      cmocka_unit_test(test_from_name),
      cmocka_unit_test(test_from_name_invalid),
      cmocka_unit_test(test_dlpack_round_trip),
      cmocka_unit_test(test_from_dlpack_invalid),
      cmocka_unit_test(test_to_dlpack_errors),
      cmocka_unit_test(test_promote_matrix),
      cmocka_unit_test(test_promote_errors),
      cmocka_unit_test_setup_teardown(test_tensor_dtype_identity, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests_name("capi.dtype", tests, NULL, NULL);
}
