/* CMocka tests of the reductions and scans of the C ABI (of_prod, of_logsumexp, of_all, of_any,
 * of_norm, of_cumsum, of_cumprod) on small inputs worked out by hand, and their error statuses. */
#include "capi_op_util.h"

static void test_prod(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  OP_EXPECT(of_prod(s, x, NULL, 0, 0, &r), F32, DIMS0, VALS(720), 0);
  OP_EXPECT(of_prod(s, x, DIMS(1), 0, &r), F32, DIMS(2), VALS(6, 120), 0);
  OP_EXPECT(of_prod(s, x, DIMS(-2), 1, &r), F32, DIMS(1, 3), VALS(4, 10, 18), 0);
  of_tensor_t* ints = make_tensor(s, I32, DIMS(3), VALS(2, -3, 4));
  OP_EXPECT(of_prod(s, ints, NULL, 0, 0, &r), I64, DIMS0, VALS(-24), 0);
  OP_FAILS(of_prod(s, x, DIMS(2), 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_prod", "prod");
  OP_FAILS(of_prod(s, x, NULL, 1, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_prod", "dims");
  OP_FAILS(of_prod(s, x, NULL, 0, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_prod", "keepdim");
  OP_FAILS(of_prod(NULL, x, NULL, 0, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_prod", "session");

  /* d/dx of prod(0, 2, 3): only the zero gets a gradient, 2 * 3. */
  of_tensor_t* z = make_tensor(s, F64, DIMS(3), VALS(0, 2, 3));
  ASSERT_OK(of_tensor_set_requires_grad(z, 1));
  of_tensor_t* p = NULL;
  ASSERT_OK(of_prod(s, z, NULL, 0, 0, &p));
  ASSERT_OK(of_tensor_backward(s, p, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(z, &g));
  EXPECT_TENSOR(g, F64, DIMS(3), VALS(6, 0, 0), 0);
  of_tensor_release(g);
  of_tensor_release(p);
  of_tensor_release(z);
  of_tensor_release(ints);
  of_tensor_release(x);
}

static void test_logsumexp(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(2, 2), VALS(0, 0, 1000, 1000));
  OP_EXPECT(of_logsumexp(s, x, DIMS(1), 0, &r), F64, DIMS(2), VALS(log(2.0), 1000 + log(2.0)), 1e-12);
  OP_EXPECT(of_logsumexp(s, x, DIMS(0), 1, &r), F64, DIMS(1, 2), VALS(1000, 1000), 1e-12);
  of_tensor_t* ints = make_tensor(s, I64, DIMS(2), VALS(1, 2));
  OP_FAILS(of_logsumexp(s, ints, NULL, 0, 0, &r), OF_STATUS_INVALID_ARGUMENT, "logsumexp", "floating point");
  of_tensor_release(ints);
  of_tensor_release(x);
}

static void test_all_any(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 2), VALS(0, 1, 2, 3));
  OP_EXPECT(of_all(s, x, DIMS(1), 0, &r), BOOL, DIMS(2), VALS(0, 1), 0);
  OP_EXPECT(of_any(s, x, DIMS(0), 0, &r), BOOL, DIMS(2), VALS(1, 1), 0);
  OP_EXPECT(of_all(s, x, NULL, 0, 0, &r), BOOL, DIMS0, VALS(0), 0);
  OP_EXPECT(of_any(s, x, NULL, 0, 1, &r), BOOL, DIMS(1, 1), VALS(1), 0);
  of_tensor_t* zeros = make_tensor(s, I32, DIMS(2), VALS(0, 0));
  OP_EXPECT(of_any(s, zeros, NULL, 0, 0, &r), BOOL, DIMS0, VALS(0), 0);
  of_tensor_t* empty = make_tensor(s, BOOL, DIMS(0), NULL, 0);
  OP_EXPECT(of_all(s, empty, NULL, 0, 0, &r), BOOL, DIMS0, VALS(1), 0);
  OP_FAILS(of_any(s, x, DIMS(0, 0), 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_any", "any");
  of_tensor_release(empty);
  of_tensor_release(zeros);
  of_tensor_release(x);
}

static void test_norm(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 2), VALS(3, -4, 0, 1));
  OP_EXPECT(of_norm(s, x, 2, DIMS(1), 0, &r), F32, DIMS(2), VALS(5, 1), 1e-6);
  OP_EXPECT(of_norm(s, x, 1, NULL, 0, 0, &r), F32, DIMS0, VALS(8), 1e-6);
  OP_EXPECT(of_norm(s, x, INFINITY, DIMS(0), 1, &r), F32, DIMS(1, 2), VALS(3, 4), 0);
  OP_EXPECT(of_norm(s, x, -INFINITY, DIMS(1), 0, &r), F32, DIMS(2), VALS(3, 0), 0);
  OP_FAILS(of_norm(s, x, 3, NULL, 0, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_norm", "p must be 1, 2, inf or -inf");
  OP_FAILS(of_norm(s, x, NAN, NULL, 0, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_norm", "p must be");
  of_tensor_t* ints = make_tensor(s, I64, DIMS(2), VALS(1, 2));
  OP_FAILS(of_norm(s, ints, 2, NULL, 0, 0, &r), OF_STATUS_INVALID_ARGUMENT, "norm", "floating point");
  of_tensor_release(ints);
  of_tensor_release(x);
}

static void test_scans(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 0, 6));
  OP_EXPECT(of_cumsum(s, x, 1, &r), F32, DIMS(2, 3), VALS(1, 3, 6, 4, 4, 10), 0);
  OP_EXPECT(of_cumsum(s, x, -2, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 5, 2, 9), 0);
  OP_EXPECT(of_cumprod(s, x, 1, &r), F32, DIMS(2, 3), VALS(1, 2, 6, 4, 0, 0), 0);
  of_tensor_t* ints = make_tensor(s, I32, DIMS(3), VALS(2, -3, 4));
  OP_EXPECT(of_cumsum(s, ints, 0, &r), I64, DIMS(3), VALS(2, -1, 3), 0);
  OP_EXPECT(of_cumprod(s, ints, 0, &r), I64, DIMS(3), VALS(2, -6, -24), 0);
  OP_FAILS(of_cumsum(s, x, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_cumsum", "dim");
  OP_FAILS(of_cumprod(s, NULL, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_cumprod", "x");

  /* d/dx of sum(cumprod(2, 0, 3)) = (1 + 0 + 0, 2 + 2 * 3, 0) = (1, 8, 0). */
  of_tensor_t* z = make_tensor(s, F64, DIMS(3), VALS(2, 0, 3));
  ASSERT_OK(of_tensor_set_requires_grad(z, 1));
  of_tensor_t* c = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_cumprod(s, z, 0, &c));
  ASSERT_OK(of_sum(s, c, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(z, &g));
  EXPECT_TENSOR(g, F64, DIMS(3), VALS(1, 8, 0), 1e-12);
  of_tensor_release(g);
  of_tensor_release(loss);
  of_tensor_release(c);
  of_tensor_release(z);
  of_tensor_release(ints);
  of_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_prod, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_logsumexp, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_all_any, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_norm, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_scans, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
