/* CMocka tests of the math ops of the C ABI: every function on small inputs whose results are worked
 * out by hand (or with libm) here, and the NULL and bad-argument statuses. */
#include "capi_op_util.h"

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double relu6(double v) { return v < 0 ? 0 : (v > 6 ? 6 : v); }

static void test_unary_floating(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(3), VALS(-0.5, 0.25, 0.75));
  const double t = 1e-12;
  OP_EXPECT(of_sin(s, x, &r), F64, DIMS(3), VALS(sin(-0.5), sin(0.25), sin(0.75)), t);
  OP_EXPECT(of_cos(s, x, &r), F64, DIMS(3), VALS(cos(-0.5), cos(0.25), cos(0.75)), t);
  OP_EXPECT(of_tan(s, x, &r), F64, DIMS(3), VALS(tan(-0.5), tan(0.25), tan(0.75)), t);
  OP_EXPECT(of_asin(s, x, &r), F64, DIMS(3), VALS(asin(-0.5), asin(0.25), asin(0.75)), t);
  OP_EXPECT(of_acos(s, x, &r), F64, DIMS(3), VALS(acos(-0.5), acos(0.25), acos(0.75)), t);
  OP_EXPECT(of_atan(s, x, &r), F64, DIMS(3), VALS(atan(-0.5), atan(0.25), atan(0.75)), t);
  OP_EXPECT(of_sinh(s, x, &r), F64, DIMS(3), VALS(sinh(-0.5), sinh(0.25), sinh(0.75)), t);
  OP_EXPECT(of_cosh(s, x, &r), F64, DIMS(3), VALS(cosh(-0.5), cosh(0.25), cosh(0.75)), t);
  OP_EXPECT(of_asinh(s, x, &r), F64, DIMS(3), VALS(asinh(-0.5), asinh(0.25), asinh(0.75)), t);
  OP_EXPECT(of_atanh(s, x, &r), F64, DIMS(3), VALS(atanh(-0.5), atanh(0.25), atanh(0.75)), t);
  OP_EXPECT(of_erf(s, x, &r), F64, DIMS(3), VALS(erf(-0.5), erf(0.25), erf(0.75)), t);
  OP_EXPECT(of_log1p(s, x, &r), F64, DIMS(3), VALS(log1p(-0.5), log1p(0.25), log1p(0.75)), t);
  OP_EXPECT(of_expm1(s, x, &r), F64, DIMS(3), VALS(expm1(-0.5), expm1(0.25), expm1(0.75)), t);
  OP_EXPECT(of_reciprocal(s, x, &r), F64, DIMS(3), VALS(-2, 4, 4.0 / 3), t);
  /* erfinv undoes erf. */
  of_tensor_t* e = make_tensor(s, F64, DIMS(3), VALS(erf(-0.5), erf(0.25), erf(0.75)));
  OP_EXPECT(of_erfinv(s, e, &r), F64, DIMS(3), VALS(-0.5, 0.25, 0.75), t);
  of_tensor_t* big = make_tensor(s, F64, DIMS(2), VALS(2, 3));
  OP_EXPECT(of_acosh(s, big, &r), F64, DIMS(2), VALS(acosh(2), acosh(3)), t);
  /* Integers give float32. */
  of_tensor_t* i = make_tensor(s, I64, DIMS(2), VALS(0, 1));
  OP_EXPECT(of_sin(s, i, &r), F32, DIMS(2), VALS(0, sin(1)), 1e-6);
  of_tensor_release(x);
  of_tensor_release(e);
  of_tensor_release(big);
  of_tensor_release(i);
}

static void test_activations(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(4), VALS(-4, -1, 0.5, 2));
  const double t = 1e-12;
  const double sa = 1.6732632423543772848170429916717, ss = 1.0507009873554804934193349852946;
  OP_EXPECT(of_silu(s, x, &r), F64, DIMS(4), VALS(-4 * sigmoid(-4), -sigmoid(-1), 0.5 * sigmoid(0.5), 2 * sigmoid(2)), t);
  OP_EXPECT(of_mish(s, x, &r), F64, DIMS(4),
            VALS(-4 * tanh(log1p(exp(-4))), -tanh(log1p(exp(-1))), 0.5 * tanh(log1p(exp(0.5))), 2 * tanh(log1p(exp(2)))), t);
  OP_EXPECT(of_selu(s, x, &r), F64, DIMS(4), VALS(ss * sa * expm1(-4), ss * sa * expm1(-1), ss * 0.5, ss * 2), t);
  OP_EXPECT(of_hardswish(s, x, &r), F64, DIMS(4), VALS(0, -relu6(2) / 6, 0.5 * relu6(3.5) / 6, 2 * 5.0 / 6), t);
  OP_EXPECT(of_hardsigmoid(s, x, &r), F64, DIMS(4), VALS(0, 2.0 / 6, 3.5 / 6, 5.0 / 6), t);
  /* beta 2, threshold 2: linear where 2x > 2. */
  OP_EXPECT(of_softplus(s, x, 2, 2, &r), F64, DIMS(4), VALS(log1p(exp(-8)) / 2, log1p(exp(-2)) / 2, log1p(exp(1)) / 2, 2), t);
  OP_EXPECT(of_elu(s, x, 0.5, &r), F64, DIMS(4), VALS(0.5 * expm1(-4), 0.5 * expm1(-1), 0.5, 2), t);
  OP_EXPECT(of_leaky_relu(s, x, 0.1, &r), F64, DIMS(4), VALS(-0.4, -0.1, 0.5, 2), t);
  OP_EXPECT(of_hardtanh(s, x, -2, 1, &r), F64, DIMS(4), VALS(-2, -1, 0.5, 1), t);
  OP_FAILS(of_hardtanh(s, x, 1, -2, &r), OF_STATUS_INVALID_ARGUMENT, "of_hardtanh", "min_val", "max_val");
  OP_FAILS(of_softplus(s, x, 0, 20, &r), OF_STATUS_INVALID_ARGUMENT, "of_softplus", "beta");
  OP_FAILS(of_elu(s, x, NAN, &r), OF_STATUS_INVALID_ARGUMENT, "of_elu", "alpha");
  OP_FAILS(of_leaky_relu(s, x, INFINITY, &r), OF_STATUS_INVALID_ARGUMENT, "of_leaky_relu", "negative_slope");
  of_tensor_release(x);
}

static void test_rounding_and_tests(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(6), VALS(0.5, 1.5, 2.5, -0.5, -2.7, NAN));
  OP_EXPECT(of_round(s, x, &r), F32, DIMS(6), VALS(0, 2, 2, -0.0, -3, NAN), 0);
  OP_EXPECT(of_floor(s, x, &r), F32, DIMS(6), VALS(0, 1, 2, -1, -3, NAN), 0);
  OP_EXPECT(of_ceil(s, x, &r), F32, DIMS(6), VALS(1, 2, 3, -0.0, -2, NAN), 0);
  OP_EXPECT(of_trunc(s, x, &r), F32, DIMS(6), VALS(0, 1, 2, -0.0, -2, NAN), 0);
  OP_EXPECT(of_sign(s, x, &r), F32, DIMS(6), VALS(1, 1, 1, -1, -1, 0), 0);
  of_tensor_t* i = make_tensor(s, I32, DIMS(3), VALS(-7, 0, 7));
  OP_EXPECT(of_floor(s, i, &r), I32, DIMS(3), VALS(-7, 0, 7), 0);
  OP_EXPECT(of_sign(s, i, &r), I32, DIMS(3), VALS(-1, 0, 1), 0);
  of_tensor_t* f = make_tensor(s, F64, DIMS(4), VALS(NAN, INFINITY, -INFINITY, 1));
  OP_EXPECT(of_isnan(s, f, &r), BOOL, DIMS(4), VALS(1, 0, 0, 0), 0);
  OP_EXPECT(of_isinf(s, f, &r), BOOL, DIMS(4), VALS(0, 1, 1, 0), 0);
  OP_EXPECT(of_isfinite(s, f, &r), BOOL, DIMS(4), VALS(0, 0, 0, 1), 0);
  OP_EXPECT(of_isfinite(s, i, &r), BOOL, DIMS(3), VALS(1, 1, 1), 0);
  of_tensor_t* flags = make_tensor(s, BOOL, DIMS(2), VALS(1, 0));
  OP_FAILS(of_floor(s, flags, &r), OF_STATUS_INVALID_ARGUMENT, "of_floor", "bool");
  of_tensor_release(x);
  of_tensor_release(i);
  of_tensor_release(f);
  of_tensor_release(flags);
}

static void test_binary(void** state) {
  of_session_t* s = *state;
  of_tensor_t* a = make_tensor(s, I32, DIMS(2, 2), VALS(-7, 7, -7, 7));
  of_tensor_t* b = make_tensor(s, I32, DIMS(2, 1), VALS(3, -3));
  OP_EXPECT(of_fmod(s, a, b, &r), I32, DIMS(2, 2), VALS(-1, 1, -1, 1), 0);
  OP_EXPECT(of_remainder(s, a, b, &r), I32, DIMS(2, 2), VALS(2, 1, -1, -2), 0);
  of_tensor_t* fa = make_tensor(s, F64, DIMS(2), VALS(-7.5, 1));
  of_tensor_t* fb = make_tensor(s, F64, DIMS(2), VALS(2, -1));
  OP_EXPECT(of_fmod(s, fa, fb, &r), F64, DIMS(2), VALS(-1.5, 0), 0);
  OP_EXPECT(of_remainder(s, fa, fb, &r), F64, DIMS(2), VALS(0.5, 0), 0);
  OP_EXPECT(of_atan2(s, fa, fb, &r), F64, DIMS(2), VALS(atan2(-7.5, 2), atan2(1, -1)), 1e-12);
  /* Integer atan2 gives float32. */
  OP_EXPECT(of_atan2(s, b, a, &r), F32, DIMS(2, 2), VALS(atan2(3, -7), atan2(3, 7), atan2(-3, -7), atan2(-3, 7)), 1e-6);
  of_tensor_t* zero = make_tensor(s, I32, DIMS(1), VALS(0));
  OP_FAILS(of_fmod(s, a, zero, &r), OF_STATUS_INVALID_ARGUMENT, "of_fmod", "division by zero");
  OP_FAILS(of_remainder(s, a, zero, &r), OF_STATUS_INVALID_ARGUMENT, "of_remainder", "division by zero");
  of_tensor_t* wide = make_tensor(s, F64, DIMS(3), VALS(1, 2, 3));
  OP_FAILS(of_atan2(s, fa, wide, &r), OF_STATUS_INVALID_ARGUMENT, "of_atan2", "(2,)", "(3,)");
  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(fa);
  of_tensor_release(fb);
  of_tensor_release(zero);
  of_tensor_release(wide);
}

static void test_bitwise(void** state) {
  of_session_t* s = *state;
  of_tensor_t* a = make_tensor(s, of_dtype_int8(), DIMS(4), VALS(12, -1, 64, -128));
  of_tensor_t* b = make_tensor(s, of_dtype_int8(), DIMS(4), VALS(10, 3, 1, 8));
  OP_EXPECT(of_bitwise_and(s, a, b, &r), of_dtype_int8(), DIMS(4), VALS(8, 3, 0, 0), 0);
  OP_EXPECT(of_bitwise_or(s, a, b, &r), of_dtype_int8(), DIMS(4), VALS(14, -1, 65, -120), 0);
  OP_EXPECT(of_bitwise_xor(s, a, b, &r), of_dtype_int8(), DIMS(4), VALS(6, -4, 65, -120), 0);
  OP_EXPECT(of_bitwise_not(s, a, &r), of_dtype_int8(), DIMS(4), VALS(-13, 0, -65, 127), 0);
  /* 64 << 1 loses the top bit; a count of 8 is past int8's width. */
  OP_EXPECT(of_bitwise_left_shift(s, a, b, &r), of_dtype_int8(), DIMS(4), VALS(0, -8, -128, 0), 0);
  OP_EXPECT(of_bitwise_right_shift(s, a, b, &r), of_dtype_int8(), DIMS(4), VALS(0, -1, 32, -1), 0);
  of_tensor_t* t = make_tensor(s, BOOL, DIMS(2), VALS(1, 0));
  OP_EXPECT(of_bitwise_not(s, t, &r), BOOL, DIMS(2), VALS(0, 1), 0);
  OP_EXPECT(of_bitwise_xor(s, t, t, &r), BOOL, DIMS(2), VALS(0, 0), 0);
  of_tensor_t* f = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  OP_FAILS(of_bitwise_and(s, f, f, &r), OF_STATUS_INVALID_ARGUMENT, "of_bitwise_and", "float32");
  OP_FAILS(of_bitwise_not(s, f, &r), OF_STATUS_INVALID_ARGUMENT, "of_bitwise_not", "float32");
  OP_FAILS(of_bitwise_left_shift(s, t, t, &r), OF_STATUS_INVALID_ARGUMENT, "of_bitwise_left_shift", "bool");
  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(t);
  of_tensor_release(f);
}

static void test_clamp(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(-3, 0, 3, -3, 0, 3));
  of_tensor_t* lo = make_tensor(s, F32, DIMS(2, 1), VALS(-1, -2));
  of_tensor_t* hi = make_tensor(s, F32, DIMS(3), VALS(1, 2, -5));
  OP_EXPECT(of_clamp(s, x, lo, hi, &r), F32, DIMS(2, 3), VALS(-1, 0, -5, -2, 0, -5), 0);
  OP_EXPECT(of_clamp(s, x, lo, NULL, &r), F32, DIMS(2, 3), VALS(-1, 0, 3, -2, 0, 3), 0);
  OP_EXPECT(of_clamp(s, x, NULL, hi, &r), F32, DIMS(2, 3), VALS(-3, 0, -5, -3, 0, -5), 0);
  OP_EXPECT(of_clamp(s, x, NULL, NULL, &r), F32, DIMS(2, 3), VALS(-3, 0, 3, -3, 0, 3), 0);
  OP_EXPECT(of_clamp_scalar(s, x, -1, 2, &r), F32, DIMS(2, 3), VALS(-1, 0, 2, -1, 0, 2), 0);
  OP_EXPECT(of_clamp_scalar(s, x, -INFINITY, 2, &r), F32, DIMS(2, 3), VALS(-3, 0, 2, -3, 0, 2), 0);
  OP_EXPECT(of_clamp_scalar(s, x, 1, INFINITY, &r), F32, DIMS(2, 3), VALS(1, 1, 3, 1, 1, 3), 0);
  /* An integer tensor with a fractional bound gives float32. */
  of_tensor_t* i = make_tensor(s, I64, DIMS(3), VALS(-4, 0, 4));
  OP_EXPECT(of_clamp_scalar(s, i, -2, 3, &r), I64, DIMS(3), VALS(-2, 0, 3), 0);
  OP_EXPECT(of_clamp_scalar(s, i, -0.5, INFINITY, &r), F32, DIMS(3), VALS(-0.5, 0, 4), 0);
  of_tensor_t* flags = make_tensor(s, BOOL, DIMS(2), VALS(1, 0));
  OP_FAILS(of_clamp(s, flags, flags, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_clamp", "bool");
  /* Scalar bounds are int64 with a bool x (the *_scalar rule), so the result is int64. */
  OP_EXPECT(of_clamp_scalar(s, flags, 0, 0, &r), I64, DIMS(2), VALS(0, 0), 0);
  of_tensor_t* wide = make_tensor(s, F32, DIMS(4), VALS(0, 0, 0, 0));
  OP_FAILS(of_clamp(s, x, wide, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_clamp", "(2, 3)", "(4,)");
  of_tensor_release(x);
  of_tensor_release(lo);
  of_tensor_release(hi);
  of_tensor_release(i);
  of_tensor_release(flags);
  of_tensor_release(wide);
}

static void test_null_arguments(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  OP_FAILS(of_sin(s, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_sin", "x");
  OP_FAILS(of_erfinv(NULL, x, &r), OF_STATUS_INVALID_ARGUMENT, "of_erfinv", "session");
  OP_FAILS(of_fmod(s, x, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_fmod", "b");
  OP_FAILS(of_clamp(s, NULL, x, x, &r), OF_STATUS_INVALID_ARGUMENT, "of_clamp", "x");
  OP_FAILS(of_hardtanh(NULL, x, -1, 1, &r), OF_STATUS_INVALID_ARGUMENT, "of_hardtanh", "session");
  ASSERT_STATUS(of_clamp_scalar(s, x, 0, 1, NULL), OF_STATUS_INVALID_ARGUMENT, "of_clamp_scalar", "out_tensor");
  ASSERT_STATUS(of_bitwise_not(s, x, NULL), OF_STATUS_INVALID_ARGUMENT, "of_bitwise_not", "out_tensor");
  of_tensor_release(x);
}

/* Gradients through the C ABI: of_sin's is cos, clamp's passes inside the bounds. */
static void test_gradients(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(3), VALS(-2, 0.5, 2));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_clamp_scalar(s, x, -1, 1, &y));
  of_tensor_t* z = NULL;
  ASSERT_OK(of_sin(s, y, &z));
  of_tensor_t* ones = make_tensor(s, F64, DIMS(3), VALS(1, 1, 1));
  ASSERT_OK(of_tensor_backward(s, z, ones, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F64, DIMS(3), VALS(0, cos(0.5), 0), 1e-12);
  of_tensor_release(g);
  of_tensor_release(ones);
  of_tensor_release(z);
  of_tensor_release(y);
  of_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_unary_floating, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_activations, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_rounding_and_tests, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_binary, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_bitwise, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_clamp, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_null_arguments, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_gradients, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
