/* Versions and status objects. */
#include "capi_test_util.h"

static void test_version_matches_header(void** state) {
  (void)state;
  int32_t major = -1, minor = -1, patch = -1;
  of_version(&major, &minor, &patch);
  assert_int_equal(major, OF_VERSION_MAJOR);
  assert_int_equal(minor, OF_VERSION_MINOR);
  assert_int_equal(patch, OF_VERSION_PATCH);
}

static void test_version_null_outs(void** state) {
  (void)state;
  of_version(NULL, NULL, NULL); /* must not crash */

  int32_t major = -7, minor = -7, patch = -7;
  of_version(&major, NULL, NULL);
  assert_int_equal(major, OF_VERSION_MAJOR);

  of_version(NULL, &minor, NULL);
  assert_int_equal(minor, OF_VERSION_MINOR);

  of_version(NULL, NULL, &patch);
  assert_int_equal(patch, OF_VERSION_PATCH);

  /* Only the parts asked for are written. */
  major = -7;
  patch = -7;
  minor = -7;
  of_version(NULL, &minor, NULL);
  assert_int_equal(major, -7);
  assert_int_equal(patch, -7);
}

static void test_version_string(void** state) {
  (void)state;
  char expected[64];
  snprintf(expected, sizeof expected, "%d.%d.%d", OF_VERSION_MAJOR, OF_VERSION_MINOR, OF_VERSION_PATCH);
  const char* v = of_version_string();
  assert_non_null(v);
  assert_string_equal(v, expected);
  /* A static string: the same on every call. */
  assert_ptr_equal(of_version_string(), v);
  assert_string_equal(of_version_string(), expected);
}

static void test_abi_version(void** state) {
  (void)state;
  assert_int_equal(of_abi_version(), OF_ABI_VERSION);
  assert_int_equal(OF_ABI_VERSION, 2);
}

static void test_status_null_is_ok(void** state) {
  (void)state;
  assert_int_equal(of_status_code(NULL), OF_STATUS_OK);
  const char* m = of_status_message(NULL);
  assert_non_null(m);
  assert_string_equal(m, "");
  of_status_destroy(NULL); /* fine */
}

static void test_status_code_values(void** state) {
  (void)state;
  /* The values are ABI: append only. */
  assert_int_equal(OF_STATUS_OK, 0);
  assert_int_equal(OF_STATUS_CANCELLED, 1);
  assert_int_equal(OF_STATUS_UNKNOWN, 2);
  assert_int_equal(OF_STATUS_INVALID_ARGUMENT, 3);
  assert_int_equal(OF_STATUS_DEADLINE_EXCEEDED, 4);
  assert_int_equal(OF_STATUS_NOT_FOUND, 5);
  assert_int_equal(OF_STATUS_ALREADY_EXISTS, 6);
  assert_int_equal(OF_STATUS_PERMISSION_DENIED, 7);
  assert_int_equal(OF_STATUS_RESOURCE_EXHAUSTED, 8);
  assert_int_equal(OF_STATUS_FAILED_PRECONDITION, 9);
  assert_int_equal(OF_STATUS_ABORTED, 10);
  assert_int_equal(OF_STATUS_OUT_OF_RANGE, 11);
  assert_int_equal(OF_STATUS_UNIMPLEMENTED, 12);
  assert_int_equal(OF_STATUS_INTERNAL, 13);
  assert_int_equal(OF_STATUS_UNAVAILABLE, 14);
  assert_int_equal(OF_STATUS_DATA_LOSS, 15);
}

static void test_status_code_names(void** state) {
  (void)state;
  static const char* const kNames[16] = {
      "OK",           "CANCELLED",         "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
      "OUT_OF_RANGE", "UNIMPLEMENTED",     "INTERNAL", "UNAVAILABLE",      "DATA_LOSS",
  };
  for (int32_t code = 0; code < 16; ++code) {
    const char* name = of_status_code_name(code);
    assert_non_null(name);
    assert_string_equal(name, kNames[code]);
  }
  const int32_t unknown[] = {16, 17, 999, -1, INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < OF_ARRAY_SIZE(unknown); ++i) {
    const char* name = of_status_code_name(unknown[i]);
    assert_non_null(name);
    assert_string_equal(name, "UNRECOGNIZED");
  }
}

static void test_status_from_a_failed_call(void** state) {
  (void)state;
  const of_dtype_t* d = NULL;
  of_status_t* s = of_dtype_from_code(0, &d);
  assert_non_null(s);
  assert_null(d);
  assert_int_equal(of_status_code(s), OF_STATUS_NOT_FOUND);
  assert_string_equal(of_status_code_name(of_status_code(s)), "NOT_FOUND");
  const char* m = of_status_message(s);
  assert_non_null(m);
  assert_non_null(strstr(m, "of_dtype_from_code"));
  assert_non_null(strstr(m, "0"));
  /* Borrowed: stable while the status lives. */
  assert_ptr_equal(of_status_message(s), m);
  of_status_destroy(s);
}

static void test_statuses_are_independent(void** state) {
  (void)state;
  /* No "last error": two statuses alive at once keep their own code and message. */
  const of_dtype_t* d = NULL;
  of_status_t* s1 = of_dtype_from_code(42, &d);
  of_status_t* s2 = of_dtype_from_name("no-such-dtype", &d);
  int64_t dim = 0;
  of_status_t* s3 = of_session_dim_symbol(NULL, "N", &dim);
  assert_non_null(s1);
  assert_non_null(s2);
  assert_non_null(s3);
  assert_true(s1 != s2 && s2 != s3 && s1 != s3);
  assert_int_equal(of_status_code(s1), OF_STATUS_NOT_FOUND);
  assert_int_equal(of_status_code(s2), OF_STATUS_NOT_FOUND);
  assert_int_equal(of_status_code(s3), OF_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(of_status_message(s1), "42"));
  assert_null(strstr(of_status_message(s1), "no-such-dtype"));
  assert_non_null(strstr(of_status_message(s2), "no-such-dtype"));
  assert_true(of_test_contains_word(of_status_message(s3), "session"));
  /* Freed in a different order from creation. */
  of_status_destroy(s2);
  assert_non_null(strstr(of_status_message(s1), "of_dtype_from_code"));
  of_status_destroy(s3);
  of_status_destroy(s1);
  assert_int_equal(dim, 0);
  assert_null(d);
}

static void test_status_message_is_utf8(void** state) {
  (void)state;
  /* A non-ASCII name comes back in the message unchanged. */
  const char* name = "fl\xc3\xb6" "at\xe2\x82\xac";
  const of_dtype_t* d = NULL;
  ASSERT_STATUS(of_dtype_from_name(name, &d), OF_STATUS_NOT_FOUND, "of_dtype_from_name", name);
  assert_null(d);
}

static void test_status_long_message(void** state) {
  (void)state;
  /* A long argument is carried into the message in full (no fixed-size buffer). */
  char name[5001];
  memset(name, 'x', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  const of_dtype_t* d = NULL;
  of_status_t* s = of_dtype_from_name(name, &d);
  assert_non_null(s);
  assert_int_equal(of_status_code(s), OF_STATUS_NOT_FOUND);
  assert_non_null(strstr(of_status_message(s), name));
  assert_true(strlen(of_status_message(s)) > 5000);
  of_status_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_matches_header),
      cmocka_unit_test(test_version_null_outs),
      cmocka_unit_test(test_version_string),
      cmocka_unit_test(test_abi_version),
      cmocka_unit_test(test_status_null_is_ok),
      cmocka_unit_test(test_status_code_values),
      cmocka_unit_test(test_status_code_names),
      cmocka_unit_test(test_status_from_a_failed_call),
      cmocka_unit_test(test_statuses_are_independent),
      cmocka_unit_test(test_status_message_is_utf8),
      cmocka_unit_test(test_status_long_message),
  };
  return cmocka_run_group_tests_name("capi.version_status", tests, NULL, NULL);
}
