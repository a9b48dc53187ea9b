/* CMocka tests of the ops section of the C ABI: every op function on small inputs whose results are
 * worked out by hand (or with libm) here, and the error paths through the ABI. */
#include "capi_op_util.h"

/* ---- elementwise binary ----------------------------------------------------------------------------- */

static void test_binary_broadcasting(void** state) {
  of_session_t* s = *state;
  of_tensor_t* a = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* b = make_tensor(s, F32, DIMS(3), VALS(10, 20, 30));
  of_tensor_t* c = make_tensor(s, F32, DIMS(2, 1), VALS(2, 0.5));
  of_tensor_t* m = make_tensor(s, F32, DIMS(3), VALS(2, 2, 7));

  OP_EXPECT(of_add(s, a, b, &r), F32, DIMS(2, 3), VALS(11, 22, 33, 14, 25, 36), 0);
  OP_EXPECT(of_sub(s, a, b, &r), F32, DIMS(2, 3), VALS(-9, -18, -27, -6, -15, -24), 0);
  OP_EXPECT(of_mul(s, a, b, &r), F32, DIMS(2, 3), VALS(10, 40, 90, 40, 100, 180), 0);
  OP_EXPECT(of_div(s, a, b, &r), F32, DIMS(2, 3), VALS(0.1, 0.1, 0.1, 0.4, 0.25, 0.2), 1e-6);
  OP_EXPECT(of_pow(s, a, c, &r), F32, DIMS(2, 3), VALS(1, 4, 9, 2, sqrt(5), sqrt(6)), 1e-6);
  OP_EXPECT(of_maximum(s, a, m, &r), F32, DIMS(2, 3), VALS(2, 2, 7, 4, 5, 7), 0);
  OP_EXPECT(of_minimum(s, a, m, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 2, 2, 6), 0);
  /* Both operands broadcast: (2, 1) with (3). */
  OP_EXPECT(of_add(s, c, b, &r), F32, DIMS(2, 3), VALS(12, 22, 32, 10.5, 20.5, 30.5), 0);

  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(c);
  of_tensor_release(m);
}

static void test_binary_promotion(void** state) {
  of_session_t* s = *state;
  of_tensor_t* i32 = make_tensor(s, I32, DIMS(2), VALS(1, 2));
  of_tensor_t* i64 = make_tensor(s, I64, DIMS(2), VALS(7, -7));
  of_tensor_t* two = make_tensor(s, I64, DIMS(2), VALS(2, 2));
  of_tensor_t* f64 = make_tensor(s, F64, DIMS(2), VALS(0.5, 0.25));
  of_tensor_t* u8 = make_tensor(s, of_dtype_uint8(), DIMS(2), VALS(200, 1));
  of_tensor_t* i8 = make_tensor(s, of_dtype_int8(), DIMS(2), VALS(100, -2));

  OP_EXPECT(of_add(s, i32, f64, &r), F64, DIMS(2), VALS(1.5, 2.25), 0);
  OP_EXPECT(of_add(s, i32, i64, &r), I64, DIMS(2), VALS(8, -5), 0);
  OP_EXPECT(of_mul(s, i64, two, &r), I64, DIMS(2), VALS(14, -14), 0);
  /* True division: integers give float32. */
  OP_EXPECT(of_div(s, i64, two, &r), F32, DIMS(2), VALS(3.5, -3.5), 0);
  /* uint8 with int8 is int16: 200 + 100 does not wrap. */
  OP_EXPECT(of_add(s, u8, i8, &r), of_dtype_int16(), DIMS(2), VALS(300, -1), 0);

  of_tensor_release(i32);
  of_tensor_release(i64);
  of_tensor_release(two);
  of_tensor_release(f64);
  of_tensor_release(u8);
  of_tensor_release(i8);
}

static void test_scalar_ops(void** state) {
  of_session_t* s = *state;
  of_tensor_t* a = make_tensor(s, F32, DIMS(3), VALS(1, 2, 4));
  OP_EXPECT(of_add_scalar(s, a, 0.5, &r), F32, DIMS(3), VALS(1.5, 2.5, 4.5), 0);
  OP_EXPECT(of_sub_scalar(s, a, 1, &r), F32, DIMS(3), VALS(0, 1, 3), 0);
  OP_EXPECT(of_mul_scalar(s, a, 2, &r), F32, DIMS(3), VALS(2, 4, 8), 0);
  OP_EXPECT(of_div_scalar(s, a, 4, &r), F32, DIMS(3), VALS(0.25, 0.5, 1), 0);
  OP_EXPECT(of_pow_scalar(s, a, 2, &r), F32, DIMS(3), VALS(1, 4, 16), 1e-6);
  OP_EXPECT(of_pow_scalar(s, a, 0.5, &r), F32, DIMS(3), VALS(1, sqrt(2), 2), 1e-6);
  OP_EXPECT(of_maximum_scalar(s, a, 2, &r), F32, DIMS(3), VALS(2, 2, 4), 0);
  OP_EXPECT(of_minimum_scalar(s, a, 2, &r), F32, DIMS(3), VALS(1, 2, 2), 0);

  /* The scalar's dtype: a float scalar with an integer tensor gives float32; an integral one keeps
   * the integer type; an integral one with bool gives int64; float64 tensors keep float64. */
  of_tensor_t* i64 = make_tensor(s, I64, DIMS(2), VALS(1, 2));
  of_tensor_t* i32 = make_tensor(s, I32, DIMS(2), VALS(1, 2));
  of_tensor_t* b = make_tensor(s, BOOL, DIMS(2), VALS(1, 0));
  of_tensor_t* f64 = make_tensor(s, F64, DIMS(1), VALS(1));
  OP_EXPECT(of_add_scalar(s, i64, 0.5, &r), F32, DIMS(2), VALS(1.5, 2.5), 0);
  OP_EXPECT(of_mul_scalar(s, i64, 3, &r), I64, DIMS(2), VALS(3, 6), 0);
  OP_EXPECT(of_add_scalar(s, i32, 1, &r), I32, DIMS(2), VALS(2, 3), 0);
  OP_EXPECT(of_add_scalar(s, b, 2, &r), I64, DIMS(2), VALS(3, 2), 0);
  OP_EXPECT(of_add_scalar(s, f64, 0.1, &r), F64, DIMS(1), VALS(1.1), 1e-15);
  OP_EXPECT(of_div_scalar(s, i64, 2, &r), F32, DIMS(2), VALS(0.5, 1), 0);
  OP_EXPECT(of_add_scalar(s, b, 1, &r), I64, DIMS(2), VALS(2, 1), 0); /* 1 is an int here too: int64 */
  /* The dtype never depends on the scalar's magnitude: int8 with 300 is refused (it was int64, while
   * int8 with 1 is int8), as is float16 with 1e6, for every *_scalar function. */
  of_tensor_t* i8 = make_tensor(s, of_dtype_int8(), DIMS(2), VALS(1, 2));
  of_tensor_t* f16 = NULL;
  ASSERT_OK(of_tensor_ones(s, of_dtype_float16(), DIMS(2), NULL, &f16));
  OP_EXPECT(of_add_scalar(s, i8, 1, &r), of_dtype_int8(), DIMS(2), VALS(2, 3), 0);
  OP_FAILS(of_add_scalar(s, i8, 300, &r), OF_STATUS_INVALID_ARGUMENT, "of_add_scalar", "scalar", "300", "int8");
  OP_FAILS(of_gt_scalar(s, i8, -200, &r), OF_STATUS_INVALID_ARGUMENT, "of_gt_scalar", "int8");
  OP_FAILS(of_mul_scalar(s, f16, 1e6, &r), OF_STATUS_INVALID_ARGUMENT, "of_mul_scalar", "float16");
  of_tensor_release(i8);
  of_tensor_release(f16);

  of_tensor_release(a);
  of_tensor_release(i64);
  of_tensor_release(i32);
  of_tensor_release(b);
  of_tensor_release(f64);
}

/* ---- comparisons and logic ---------------------------------------------------------------------------- */

static void test_comparisons(void** state) {
  of_session_t* s = *state;
  of_tensor_t* a = make_tensor(s, F32, DIMS(3), VALS(1, 2, 3));
  of_tensor_t* b = make_tensor(s, F32, DIMS(3), VALS(3, 2, 1));
  OP_EXPECT(of_gt(s, a, b, &r), BOOL, DIMS(3), VALS(0, 0, 1), 0);
  OP_EXPECT(of_ge(s, a, b, &r), BOOL, DIMS(3), VALS(0, 1, 1), 0);
  OP_EXPECT(of_lt(s, a, b, &r), BOOL, DIMS(3), VALS(1, 0, 0), 0);
  OP_EXPECT(of_le(s, a, b, &r), BOOL, DIMS(3), VALS(1, 1, 0), 0);
  OP_EXPECT(of_eq(s, a, b, &r), BOOL, DIMS(3), VALS(0, 1, 0), 0);
  OP_EXPECT(of_ne(s, a, b, &r), BOOL, DIMS(3), VALS(1, 0, 1), 0);

  OP_EXPECT(of_gt_scalar(s, a, 1.5, &r), BOOL, DIMS(3), VALS(0, 1, 1), 0);
  OP_EXPECT(of_ge_scalar(s, a, 2, &r), BOOL, DIMS(3), VALS(0, 1, 1), 0);
  OP_EXPECT(of_lt_scalar(s, a, 2, &r), BOOL, DIMS(3), VALS(1, 0, 0), 0);
  OP_EXPECT(of_le_scalar(s, a, 2, &r), BOOL, DIMS(3), VALS(1, 1, 0), 0);
  OP_EXPECT(of_eq_scalar(s, a, 2, &r), BOOL, DIMS(3), VALS(0, 1, 0), 0);
  OP_EXPECT(of_ne_scalar(s, a, 2, &r), BOOL, DIMS(3), VALS(1, 0, 1), 0);

  /* Broadcasting and mixed dtypes: compared in the promoted dtype. */
  of_tensor_t* col = make_tensor(s, I64, DIMS(2, 1), VALS(1, 3));
  of_tensor_t* row = make_tensor(s, F32, DIMS(2), VALS(1.5, 3));
  OP_EXPECT(of_gt(s, col, row, &r), BOOL, DIMS(2, 2), VALS(0, 0, 1, 0), 0);
  OP_EXPECT(of_eq_scalar(s, col, 1.5, &r), BOOL, DIMS(2, 1), VALS(0, 0), 0);

  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(col);
  of_tensor_release(row);
}

static void test_where_and_logic(void** state) {
  of_session_t* s = *state;
  of_tensor_t* cond = make_tensor(s, BOOL, DIMS(3), VALS(1, 0, 1));
  of_tensor_t* a = make_tensor(s, F32, DIMS(3), VALS(1, 2, 3));
  of_tensor_t* b = make_tensor(s, F32, DIMS(1), VALS(-1));
  of_tensor_t* ai = make_tensor(s, I64, DIMS(3), VALS(4, 5, 6));
  OP_EXPECT(of_where(s, cond, a, b, &r), F32, DIMS(3), VALS(1, -1, 3), 0);
  OP_EXPECT(of_where(s, cond, ai, b, &r), F32, DIMS(3), VALS(4, -1, 6), 0);
  OP_FAILS(of_where(s, a, a, b, &r), OF_STATUS_INVALID_ARGUMENT, "of_where", "cond");

  of_tensor_t* x = make_tensor(s, F32, DIMS(4), VALS(0, 2, -1, 0));
  of_tensor_t* y = make_tensor(s, I64, DIMS(4), VALS(1, 0, 3, 0));
  OP_EXPECT(of_logical_and(s, x, y, &r), BOOL, DIMS(4), VALS(0, 0, 1, 0), 0);
  OP_EXPECT(of_logical_or(s, x, y, &r), BOOL, DIMS(4), VALS(1, 1, 1, 0), 0);
  OP_EXPECT(of_logical_not(s, x, &r), BOOL, DIMS(4), VALS(1, 0, 0, 1), 0);

  of_tensor_release(cond);
  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(ai);
  of_tensor_release(x);
  of_tensor_release(y);
}

/* ---- elementwise unary, cast ----------------------------------------------------------------------------- */

static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double ref_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2))); }
static double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

static void test_unary(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(3), VALS(-1.5, 0, 2));
  OP_EXPECT(of_neg(s, x, &r), F32, DIMS(3), VALS(1.5, 0, -2), 0);
  OP_EXPECT(of_abs(s, x, &r), F32, DIMS(3), VALS(1.5, 0, 2), 0);
  OP_EXPECT(of_relu(s, x, &r), F32, DIMS(3), VALS(0, 0, 2), 0);
  OP_EXPECT(of_gelu(s, x, 0, &r), F32, DIMS(3), VALS(ref_gelu(-1.5), 0, ref_gelu(2)), 1e-6);
  OP_EXPECT(of_gelu(s, x, 1, &r), F32, DIMS(3), VALS(ref_gelu_tanh(-1.5), 0, ref_gelu_tanh(2)), 1e-6);
  OP_FAILS(of_gelu(s, x, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_gelu", "tanh_approximation");

  of_tensor_t* i = make_tensor(s, I64, DIMS(2), VALS(-3, 4));
  OP_EXPECT(of_neg(s, i, &r), I64, DIMS(2), VALS(3, -4), 0);
  OP_EXPECT(of_abs(s, i, &r), I64, DIMS(2), VALS(3, 4), 0);
  OP_EXPECT(of_relu(s, i, &r), I64, DIMS(2), VALS(0, 4), 0);
  /* Transcendental functions of integers give float32. */
  of_tensor_t* i01 = make_tensor(s, I64, DIMS(2), VALS(0, 1));
  OP_EXPECT(of_exp(s, i01, &r), F32, DIMS(2), VALS(1, exp(1)), 1e-6);

  of_tensor_t* y = make_tensor(s, F64, DIMS(3), VALS(0.25, 1, 4));
  const double tol = 1e-12;
  OP_EXPECT(of_exp(s, y, &r), F64, DIMS(3), VALS(exp(0.25), exp(1), exp(4)), tol);
  OP_EXPECT(of_log(s, y, &r), F64, DIMS(3), VALS(log(0.25), 0, log(4)), tol);
  OP_EXPECT(of_sqrt(s, y, &r), F64, DIMS(3), VALS(0.5, 1, 2), tol);
  OP_EXPECT(of_rsqrt(s, y, &r), F64, DIMS(3), VALS(2, 1, 0.5), tol);
  OP_EXPECT(of_sigmoid(s, y, &r), F64, DIMS(3), VALS(ref_sigmoid(0.25), ref_sigmoid(1), ref_sigmoid(4)), tol);
  OP_EXPECT(of_tanh(s, y, &r), F64, DIMS(3), VALS(tanh(0.25), tanh(1), tanh(4)), tol);
  OP_EXPECT(of_gelu(s, y, 0, &r), F64, DIMS(3), VALS(ref_gelu(0.25), ref_gelu(1), ref_gelu(4)), tol);

  of_tensor_release(x);
  of_tensor_release(i);
  of_tensor_release(i01);
  of_tensor_release(y);
}

static void test_cast(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(4), VALS(1.75, -1.75, 0, 2.5));
  OP_EXPECT(of_cast(s, x, I32, &r), I32, DIMS(4), VALS(1, -1, 0, 2), 0);
  OP_EXPECT(of_cast(s, x, BOOL, &r), BOOL, DIMS(4), VALS(1, 1, 0, 1), 0);
  OP_EXPECT(of_cast(s, x, F64, &r), F64, DIMS(4), VALS(1.75, -1.75, 0, 2.5), 0);
  OP_EXPECT(of_cast(s, x, of_dtype_float16(), &r), of_dtype_float16(), DIMS(4), VALS(1.75, -1.75, 0, 2.5), 0);
  OP_EXPECT(of_cast(s, x, of_dtype_bfloat16(), &r), of_dtype_bfloat16(), DIMS(4), VALS(1.75, -1.75, 0, 2.5), 0);
  of_tensor_t* i = make_tensor(s, I64, DIMS(2), VALS(3, -70000));
  OP_EXPECT(of_cast(s, i, F32, &r), F32, DIMS(2), VALS(3, -70000), 0);
  OP_FAILS(of_cast(s, x, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_cast", "dtype");
  of_tensor_release(x);
  of_tensor_release(i);
}

/* ---- reductions --------------------------------------------------------------------------------------------- */

static void test_reductions(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  OP_EXPECT(of_sum(s, x, NULL, 0, 0, &r), F32, DIMS0, VALS(21), 0);
  OP_EXPECT(of_sum(s, x, (int64_t[]){1}, 1, 0, &r), F32, DIMS(2), VALS(6, 15), 0);
  OP_EXPECT(of_sum(s, x, (int64_t[]){1}, 1, 1, &r), F32, DIMS(2, 1), VALS(6, 15), 0);
  OP_EXPECT(of_sum(s, x, (int64_t[]){-2}, 1, 0, &r), F32, DIMS(3), VALS(5, 7, 9), 0);
  OP_EXPECT(of_sum(s, x, (int64_t[]){0, 1}, 2, 1, &r), F32, DIMS(1, 1), VALS(21), 0);
  OP_EXPECT(of_mean(s, x, (int64_t[]){0}, 1, 0, &r), F32, DIMS(3), VALS(2.5, 3.5, 4.5), 0);
  OP_EXPECT(of_mean(s, x, NULL, 0, 0, &r), F32, DIMS0, VALS(3.5), 0);
  OP_EXPECT(of_max(s, x, NULL, 0, 0, &r), F32, DIMS0, VALS(6), 0);
  OP_EXPECT(of_max(s, x, (int64_t[]){1}, 1, 1, &r), F32, DIMS(2, 1), VALS(3, 6), 0);
  OP_EXPECT(of_min(s, x, (int64_t[]){0}, 1, 0, &r), F32, DIMS(3), VALS(1, 2, 3), 0);
  OP_EXPECT(of_min(s, x, NULL, 0, 0, &r), F32, DIMS0, VALS(1), 0);

  /* Variance of rows (1, 2, 3): squared deviations sum to 2. Of 1..6: 17.5. */
  OP_EXPECT(of_var(s, x, (int64_t[]){1}, 1, 1, 0, &r), F32, DIMS(2), VALS(1, 1), 1e-6);
  OP_EXPECT(of_var(s, x, (int64_t[]){1}, 1, 0, 0, &r), F32, DIMS(2), VALS(2.0 / 3, 2.0 / 3), 1e-6);
  OP_EXPECT(of_var(s, x, NULL, 0, 1, 0, &r), F32, DIMS0, VALS(3.5), 1e-6);
  OP_EXPECT(of_std(s, x, NULL, 0, 1, 0, &r), F32, DIMS0, VALS(sqrt(3.5)), 1e-6);
  OP_EXPECT(of_std(s, x, (int64_t[]){0}, 1, 0, 1, &r), F32, DIMS(1, 3), VALS(1.5, 1.5, 1.5), 1e-6);

  of_tensor_t* ties = make_tensor(s, F32, DIMS(2, 3), VALS(1, 3, 3, 5, 2, 0));
  OP_EXPECT(of_argmax(s, ties, 1, 0, &r), I64, DIMS(2), VALS(1, 0), 0); /* the first maximum */
  OP_EXPECT(of_argmax(s, ties, -2, 1, &r), I64, DIMS(1, 3), VALS(1, 0, 0), 0);

  of_tensor_t* ints = make_tensor(s, I32, DIMS(3), VALS(1, 2, 3));
  of_tensor_t* bools = make_tensor(s, BOOL, DIMS(3), VALS(1, 0, 1));
  OP_EXPECT(of_sum(s, ints, NULL, 0, 0, &r), I64, DIMS0, VALS(6), 0);
  OP_EXPECT(of_sum(s, bools, NULL, 0, 0, &r), I64, DIMS0, VALS(2), 0);

  OP_FAILS(of_mean(s, ints, NULL, 0, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_mean", "mean");
  OP_FAILS(of_sum(s, x, (int64_t[]){2}, 1, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_sum", "sum");
  OP_FAILS(of_sum(s, x, (int64_t[]){1, -1}, 2, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_sum", "sum");
  OP_FAILS(of_sum(s, x, NULL, 1, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_sum", "dims");
  OP_FAILS(of_sum(s, x, NULL, 0, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_sum", "keepdim");
  OP_FAILS(of_argmax(s, x, 2, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_argmax", "argmax");

  of_tensor_release(x);
  of_tensor_release(ties);
  of_tensor_release(ints);
  of_tensor_release(bools);
}

/* ---- matmul, linear ------------------------------------------------------------------------------------------ */

static void test_matmul_linear(void** state) {
  of_session_t* s = *state;
  of_tensor_t* a = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* b = make_tensor(s, F32, DIMS(3, 2), VALS(7, 8, 9, 10, 11, 12));
  of_tensor_t* v = make_tensor(s, F32, DIMS(3), VALS(1, 1, 1));
  OP_EXPECT(of_matmul(s, a, b, &r), F32, DIMS(2, 2), VALS(58, 64, 139, 154), 0);
  OP_EXPECT(of_matmul(s, v, b, &r), F32, DIMS(2), VALS(27, 30), 0);
  OP_EXPECT(of_matmul(s, a, v, &r), F32, DIMS(2), VALS(6, 15), 0);
  OP_EXPECT(of_matmul(s, v, v, &r), F32, DIMS0, VALS(3), 0);
  of_tensor_t* batch = make_tensor(s, F32, DIMS(2, 1, 2), VALS(1, 2, 3, 4));
  of_tensor_t* diag = make_tensor(s, F32, DIMS(2, 2), VALS(1, 0, 0, 2));
  OP_EXPECT(of_matmul(s, batch, diag, &r), F32, DIMS(2, 1, 2), VALS(1, 4, 3, 8), 0);
  OP_FAILS(of_matmul(s, a, a, &r), OF_STATUS_INVALID_ARGUMENT, "of_matmul", "matmul");

  of_tensor_t* w = make_tensor(s, F32, DIMS(2, 3), VALS(1, 0, 0, 0, 1, 1));
  of_tensor_t* bias = make_tensor(s, F32, DIMS(2), VALS(0.5, -1));
  OP_EXPECT(of_linear(s, a, w, bias, &r), F32, DIMS(2, 2), VALS(1.5, 4, 4.5, 10), 0);
  OP_EXPECT(of_linear(s, a, w, NULL, &r), F32, DIMS(2, 2), VALS(1, 5, 4, 11), 0);
  OP_FAILS(of_linear(s, a, b, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_linear");
  OP_FAILS(of_linear(s, a, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_linear", "weight");

  /* Integers: results in the operands' dtype, wrapping around as two's complement (PyTorch's). int8:
   * [100, 100] . [2, 1] = 300 = 44 (mod 256), [-128, 0] . [2, 1] = -256 = 0, [-128, 0] . [-1, 0] = 128 =
   * -128; int32 linear with a bias: 2^30 * 2 + 2^30 * 2 + 5 = 2^32 + 5 = 5, and 3 * 2 + 4 * 2 + 5 = 19. */
  of_tensor_t* ia = make_tensor(s, of_dtype_int8(), DIMS(2, 2), VALS(100, 100, -128, 0));
  of_tensor_t* ib = make_tensor(s, of_dtype_int8(), DIMS(2), VALS(2, 1));
  OP_EXPECT(of_matmul(s, ia, ib, &r), of_dtype_int8(), DIMS(2), VALS(44, 0), 0);
  of_tensor_t* ic = make_tensor(s, of_dtype_int8(), DIMS(2, 1), VALS(-1, 0));
  OP_EXPECT(of_matmul(s, ia, ic, &r), of_dtype_int8(), DIMS(2, 1), VALS(-100, -128), 0);
  of_tensor_t* lx = make_tensor(s, I32, DIMS(2, 2), VALS(1 << 30, 1 << 30, 3, 4));
  of_tensor_t* lw = make_tensor(s, I32, DIMS(1, 2), VALS(2, 2));
  of_tensor_t* lb = make_tensor(s, I32, DIMS(1), VALS(5));
  OP_EXPECT(of_linear(s, lx, lw, lb, &r), I32, DIMS(2, 1), VALS(5, 19), 0);
  /* One dtype rule: bool is not a number (INVALID_ARGUMENT). float16 computes through float32. */
  of_tensor_t* bools = make_tensor(s, BOOL, DIMS(2, 2), VALS(1, 0, 0, 1));
  OP_FAILS(of_matmul(s, bools, bools, &r), OF_STATUS_INVALID_ARGUMENT, "of_matmul", "bool");
  of_tensor_t* halves = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float16(), (int64_t[]){2, 2}, 2, NULL, &halves));
  OP_EXPECT(of_matmul(s, halves, halves, &r), of_dtype_float16(), DIMS(2, 2), VALS(0, 0, 0, 0), 0);

  of_tensor_release(ia);
  of_tensor_release(ib);
  of_tensor_release(ic);
  of_tensor_release(lx);
  of_tensor_release(lw);
  of_tensor_release(lb);
  of_tensor_release(bools);
  of_tensor_release(halves);
  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(v);
  of_tensor_release(batch);
  of_tensor_release(diag);
  of_tensor_release(w);
  of_tensor_release(bias);
}

/* ---- conv2d, batch_norm, pooling ----------------------------------------------------------------------------- */

static void test_conv2d(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
  of_tensor_t* w = make_tensor(s, F32, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  of_tensor_t* bias = make_tensor(s, F32, DIMS(1), VALS(0.5));
  /* out[i][j] = x[i][j] + 2 x[i][j+1] + 3 x[i+1][j] + 4 x[i+1][j+1]. */
  OP_EXPECT(of_conv2d(s, x, w, NULL, NULL, &r), F32, DIMS(1, 1, 2, 2), VALS(37, 47, 67, 77), 0);
  OP_EXPECT(of_conv2d(s, x, w, bias, NULL, &r), F32, DIMS(1, 1, 2, 2), VALS(37.5, 47.5, 67.5, 77.5), 0);

  of_conv2d_options_t o;
  of_conv2d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_true(o.stride[0] == 1 && o.stride[1] == 1 && o.padding[0] == 0 && o.padding[1] == 0);
  assert_true(o.dilation[0] == 1 && o.dilation[1] == 1 && o.groups == 1);
  /* Padding 1, stride 2: windows at padded (0,0), (0,2), (2,0), (2,2) of the 5x5 padded input. */
  o.padding[0] = o.padding[1] = 1;
  o.stride[0] = o.stride[1] = 2;
  OP_EXPECT(of_conv2d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(4, 18, 36, 77), 0);
  /* A caller built before padding_end (a smaller struct_size) gets symmetric padding, whatever follows. */
  o.padding_end[0] = o.padding_end[1] = 5;
  o.struct_size = offsetof(of_conv2d_options_t, padding_end);
  OP_EXPECT(of_conv2d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(4, 18, 36, 77), 0);
  /* Asymmetric padding: zeros only after (bottom, right), then only before (top, left). */
  of_conv2d_options_init(&o);
  assert_true(o.padding_end[0] == -1 && o.padding_end[1] == -1);
  o.padding_end[0] = o.padding_end[1] = 1;
  OP_EXPECT(of_conv2d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 3, 3), VALS(37, 47, 21, 67, 77, 33, 23, 26, 9), 0);
  o.padding[0] = o.padding[1] = 1;
  o.padding_end[0] = o.padding_end[1] = 0;
  OP_EXPECT(of_conv2d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 3, 3), VALS(4, 11, 18, 18, 37, 47, 36, 67, 77), 0);
  o.padding_end[1] = -2;
  OP_FAILS(of_conv2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "padding_end");
  /* Dilation 2: the taps are the four corners. */
  of_conv2d_options_init(&o);
  of_conv2d_options_init(&o);
  o.dilation[0] = o.dilation[1] = 2;
  OP_EXPECT(of_conv2d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 1, 1), VALS(1 + 2 * 3 + 3 * 7 + 4 * 9), 0);

  /* Groups 2: each of two channels with its own 1x1 kernel. */
  of_tensor_t* x2 = make_tensor(s, F64, DIMS(1, 2, 1, 2), VALS(1, 2, 3, 4));
  of_tensor_t* w2 = make_tensor(s, F64, DIMS(2, 1, 1, 1), VALS(2, 3));
  of_conv2d_options_init(&o);
  o.groups = 2;
  OP_EXPECT(of_conv2d(s, x2, w2, NULL, &o, &r), F64, DIMS(1, 2, 1, 2), VALS(2, 4, 9, 12), 0);

  /* Errors: channel mismatch, bad attributes, an options struct that was not initialised. */
  of_tensor_t* x2c = make_tensor(s, F32, DIMS(1, 2, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9));
  OP_FAILS(of_conv2d(s, x2c, w, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "conv2d");
  of_conv2d_options_init(&o);
  o.stride[1] = 0;
  OP_FAILS(of_conv2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "stride");
  of_conv2d_options_init(&o);
  o.groups = 3;
  of_tensor_t* x4 = NULL;
  ASSERT_OK(of_tensor_zeros(s, F32, (int64_t[]){1, 4, 3, 3}, 4, NULL, &x4));
  of_tensor_t* w4 = NULL;
  ASSERT_OK(of_tensor_zeros(s, F32, (int64_t[]){3, 1, 2, 2}, 4, NULL, &w4));
  OP_FAILS(of_conv2d(s, x4, w4, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "groups");
  of_conv2d_options_init(&o);
  o.struct_size = 0;
  OP_FAILS(of_conv2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "struct_size");
  OP_FAILS(of_conv2d(s, x, NULL, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "weight");

  /* Extreme attributes are the caller's errors naming them, never INTERNAL: a dilated kernel or a
   * padded input beyond int64. */
  of_conv2d_options_init(&o);
  o.dilation[0] = INT64_MAX;
  OP_FAILS(of_conv2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "dilation[0]", "overflows");
  of_conv2d_options_init(&o);
  o.padding[1] = INT64_MAX / 2;
  OP_FAILS(of_conv2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "padding[1]", "overflows");
  /* A stride of INT64_MAX is one window per dim: x's top-left 2x2 taps, 37 + bias. */
  of_conv2d_options_init(&o);
  o.stride[0] = o.stride[1] = INT64_MAX;
  OP_EXPECT(of_conv2d(s, x, w, bias, &o, &r), F32, DIMS(1, 1, 1, 1), VALS(37.5), 0);
  /* An empty kernel is refused; zero input channels give the bias (as PyTorch). */
  of_tensor_t* wk0 = NULL;
  ASSERT_OK(of_tensor_zeros(s, F32, (int64_t[]){1, 1, 0, 2}, 4, NULL, &wk0));
  OP_FAILS(of_conv2d(s, x, wk0, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv2d", "empty kernel");
  of_tensor_t* x0 = NULL;
  ASSERT_OK(of_tensor_zeros(s, F32, (int64_t[]){1, 0, 3, 3}, 4, NULL, &x0));
  of_tensor_t* w0 = NULL;
  ASSERT_OK(of_tensor_zeros(s, F32, (int64_t[]){1, 0, 2, 2}, 4, NULL, &w0));
  OP_EXPECT(of_conv2d(s, x0, w0, bias, NULL, &r), F32, DIMS(1, 1, 2, 2), VALS(0.5, 0.5, 0.5, 0.5), 0);
  /* No integer convolution kernel: UNIMPLEMENTED naming the op and the dtype. */
  of_tensor_t* xi = make_tensor(s, I64, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  OP_FAILS(of_conv2d(s, xi, xi, NULL, NULL, &r), OF_STATUS_UNIMPLEMENTED, "of_conv2d", "conv2d", "int64");

  of_tensor_release(wk0);
  of_tensor_release(x0);
  of_tensor_release(w0);
  of_tensor_release(xi);
  of_tensor_release(x);
  of_tensor_release(w);
  of_tensor_release(bias);
  of_tensor_release(x2);
  of_tensor_release(w2);
  of_tensor_release(x2c);
  of_tensor_release(x4);
  of_tensor_release(w4);
}

static void test_batch_norm(void** state) {
  of_session_t* s = *state;
  /* (N=2, C=2, 1, 2): channel 0 holds 1, 3, 5, 7 (mean 4, biased var 5, unbiased 20/3); channel 1
   * holds 0, 0, 2, 2 (mean 1, biased var 1, unbiased 4/3). */
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 2, 1, 2), VALS(1, 3, 0, 0, 5, 7, 2, 2));
  of_tensor_t* w = make_tensor(s, F32, DIMS(2), VALS(2, 1));
  of_tensor_t* b = make_tensor(s, F32, DIMS(2), VALS(1, 0));
  of_tensor_t* rm = make_tensor(s, F32, DIMS(2), VALS(0, 0));
  of_tensor_t* rv = make_tensor(s, F32, DIMS(2), VALS(1, 1));
  const double eps = 1e-5;
  const double s0 = 2 / sqrt(5 + eps), s1 = 1 / sqrt(1 + eps);

  of_batch_norm_options_t o;
  of_batch_norm_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.training, 1);
  assert_true(o.momentum == 0.1 && o.eps == 1e-5);
  OP_EXPECT(of_batch_norm(s, x, w, b, rm, rv, &o, &r), F32, DIMS(2, 2, 1, 2),
            VALS(-3 * s0 + 1, -1 * s0 + 1, -s1, -s1, 1 * s0 + 1, 3 * s0 + 1, s1, s1), 1e-5);
  /* The running statistics were updated in place with momentum 0.1 and the unbiased variance. */
  EXPECT_TENSOR(rm, F32, DIMS(2), VALS(0.4, 0.1), 1e-6);
  EXPECT_TENSOR(rv, F32, DIMS(2), VALS(0.9 + 0.1 * 20 / 3, 0.9 + 0.1 * 4 / 3), 1e-6);

  /* Defaults (NULL options) and no affine parameters or running statistics. */
  OP_EXPECT(of_batch_norm(s, x, NULL, NULL, NULL, NULL, NULL, &r), F32, DIMS(2, 2, 1, 2),
            VALS(-1.5 * s0, -0.5 * s0, -s1, -s1, 0.5 * s0, 1.5 * s0, s1, s1), 1e-5);

  /* Inference normalises with the running statistics. */
  of_tensor_t* im = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  of_tensor_t* iv = make_tensor(s, F32, DIMS(2), VALS(4, 1));
  o.training = 0;
  const double t0 = 2 / sqrt(4 + eps), t1 = 1 / sqrt(1 + eps);
  OP_EXPECT(of_batch_norm(s, x, w, b, im, iv, &o, &r), F32, DIMS(2, 2, 1, 2),
            VALS(0 * t0 + 1, 2 * t0 + 1, -2 * t1, -2 * t1, 4 * t0 + 1, 6 * t0 + 1, 0, 0), 1e-5);
  EXPECT_TENSOR(im, F32, DIMS(2), VALS(1, 2), 0); /* not updated in inference */

  OP_FAILS(of_batch_norm(s, x, w, b, NULL, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_batch_norm");
  o.training = 2;
  OP_FAILS(of_batch_norm(s, x, w, b, im, iv, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_batch_norm", "training");
  of_tensor_t* w3 = make_tensor(s, F32, DIMS(3), VALS(1, 1, 1));
  OP_FAILS(of_batch_norm(s, x, w3, NULL, NULL, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_batch_norm", "weight");
  o.struct_size = 0;
  OP_FAILS(of_batch_norm(s, x, w, b, im, iv, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_batch_norm", "struct_size");
  /* eps must be > 0 (and finite), momentum in [0, 1]. */
  of_batch_norm_options_init(&o);
  o.eps = 0;
  OP_FAILS(of_batch_norm(s, x, w, b, rm, rv, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_batch_norm", "eps");
  of_batch_norm_options_init(&o);
  o.momentum = 1.5;
  OP_FAILS(of_batch_norm(s, x, w, b, rm, rv, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_batch_norm", "momentum");

  /* relu(batch_norm(x) + addend), the running statistics updated as of_batch_norm's; without an addend,
   * relu(batch_norm(x)). */
  of_tensor_t* addend = make_tensor(s, F32, DIMS(2, 2, 1, 2), VALS(0, 5, 1, -1, 0, -10, 0, 0));
  of_tensor_t* rm2 = make_tensor(s, F32, DIMS(2), VALS(0, 0));
  of_tensor_t* rv2 = make_tensor(s, F32, DIMS(2), VALS(1, 1));
  of_batch_norm_options_init(&o);
  OP_EXPECT(of_batch_norm_add_relu(s, x, addend, w, b, rm2, rv2, &o, &r), F32, DIMS(2, 2, 1, 2),
            VALS(0, -1 * s0 + 6, 1 - s1, 0, 1 * s0 + 1, 0, s1, s1), 1e-5);
  EXPECT_TENSOR(rm2, F32, DIMS(2), VALS(0.4, 0.1), 1e-6);
  OP_EXPECT(of_batch_norm_add_relu(s, x, NULL, NULL, NULL, NULL, NULL, NULL, &r), F32, DIMS(2, 2, 1, 2),
            VALS(0, 0, 0, 0, 0.5 * s0, 1.5 * s0, s1, s1), 1e-5);
  /* The addend must match x; the rest is checked as of_batch_norm's. */
  OP_FAILS(of_batch_norm_add_relu(s, x, w, NULL, NULL, NULL, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT,
           "of_batch_norm_add_relu", "addend", "(2,)", "(2, 2, 1, 2)");
  OP_FAILS(of_batch_norm_add_relu(s, x, addend, w3, NULL, NULL, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT,
           "of_batch_norm_add_relu", "weight");

  of_tensor_release(addend);
  of_tensor_release(rm2);
  of_tensor_release(rv2);
  of_tensor_release(x);
  of_tensor_release(w);
  of_tensor_release(b);
  of_tensor_release(rm);
  of_tensor_release(rv);
  of_tensor_release(im);
  of_tensor_release(iv);
  of_tensor_release(w3);
}

static void test_pooling(void** state) {
  of_session_t* s = *state;
  /* x[i][j] = 4 i + j + 1. */
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 4, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
  of_pool2d_options_t o;
  of_pool2d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_true(o.kernel_size[0] == 0 && o.stride[0] == 0 && o.padding[0] == 0 && o.dilation[0] == 1);
  assert_true(o.ceil_mode == 0 && o.count_include_pad == 1);

  o.kernel_size[0] = o.kernel_size[1] = 2; /* stride 0: the kernel size */
  OP_EXPECT(of_max_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(6, 8, 14, 16), 0);
  OP_EXPECT(of_avg_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(3.5, 5.5, 11.5, 13.5), 0);

  /* Kernel 2, stride 2, padding 1: 3x3 windows covering rows {0}, {1, 2}, {3} and the same columns. */
  o.stride[0] = o.stride[1] = 2;
  o.padding[0] = o.padding[1] = 1;
  OP_EXPECT(of_max_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 3, 3), VALS(1, 3, 4, 9, 11, 12, 13, 15, 16), 0);
  OP_EXPECT(of_avg_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 3, 3),
            VALS(0.25, 1.25, 1, 3.5, 8.5, 5, 3.25, 7.25, 4), 1e-6);
  o.count_include_pad = 0;
  OP_EXPECT(of_avg_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 3, 3), VALS(1, 2.5, 4, 7, 8.5, 10, 13, 14.5, 16), 1e-6);

  /* ceil_mode: kernel 3, stride 2 gives 1x1 rounded down and 2x2 rounded up. */
  of_pool2d_options_init(&o);
  o.kernel_size[0] = o.kernel_size[1] = 3;
  o.stride[0] = o.stride[1] = 2;
  OP_EXPECT(of_max_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 1, 1), VALS(11), 0);
  o.ceil_mode = 1;
  OP_EXPECT(of_max_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(11, 12, 15, 16), 0);

  /* Asymmetric padding: kernel 3, stride 2, one row and column of padding after the input only. The
   * average counts the padding cells inside the window (divisor 9), or only the input cells. */
  of_pool2d_options_init(&o);
  assert_true(o.padding_end[0] == -1 && o.padding_end[1] == -1);
  o.kernel_size[0] = o.kernel_size[1] = 3;
  o.stride[0] = o.stride[1] = 2;
  o.padding_end[0] = o.padding_end[1] = 1;
  OP_EXPECT(of_max_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(11, 12, 15, 16), 0);
  OP_EXPECT(of_avg_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(6, 5, 8, 6), 1e-6);
  o.count_include_pad = 0;
  OP_EXPECT(of_avg_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(6, 7.5, 12, 13.5), 1e-6);
  o.padding_end[0] = 2;
  OP_FAILS(of_max_pool2d(s, x, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_max_pool2d", "padding_end", "half");
  /* An older, smaller struct: symmetric padding (none here), whatever follows. */
  o.struct_size = offsetof(of_pool2d_options_t, padding_end);
  o.count_include_pad = 1;
  OP_EXPECT(of_avg_pool2d(s, x, &o, &r), F32, DIMS(1, 1, 1, 1), VALS(6), 1e-6);

  OP_EXPECT(of_adaptive_avg_pool2d(s, x, 1, 1, &r), F32, DIMS(1, 1, 1, 1), VALS(8.5), 1e-6);
  OP_EXPECT(of_adaptive_avg_pool2d(s, x, 2, 2, &r), F32, DIMS(1, 1, 2, 2), VALS(3.5, 5.5, 11.5, 13.5), 1e-6);
  /* 4 -> 3: windows [0, 2), [1, 3), [2, 4) in each dim, whose mean indices are 0.5, 1.5, 2.5; the mean
   * of x over a window is 4 * (mean row) + (mean column) + 1. */
  OP_EXPECT(of_adaptive_avg_pool2d(s, x, 3, 3, &r), F32, DIMS(1, 1, 3, 3),
            VALS(3.5, 4.5, 5.5, 7.5, 8.5, 9.5, 11.5, 12.5, 13.5), 1e-6);

  /* Errors: kernel size 0 (the default), no options, bad flags, uninitialised options. */
  of_pool2d_options_init(&o);
  OP_FAILS(of_max_pool2d(s, x, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_max_pool2d", "kernel_size");
  OP_FAILS(of_avg_pool2d(s, x, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_avg_pool2d", "options");
  o.kernel_size[0] = o.kernel_size[1] = 2;
  o.ceil_mode = 5;
  OP_FAILS(of_max_pool2d(s, x, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_max_pool2d", "options->ceil_mode");
  o.ceil_mode = 0;
  o.struct_size = 0;
  OP_FAILS(of_avg_pool2d(s, x, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_avg_pool2d", "struct_size");
  OP_FAILS(of_adaptive_avg_pool2d(s, x, 0, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_adaptive_avg_pool2d");
  /* A padded input beyond int64 names the padding, never INTERNAL. */
  of_pool2d_options_init(&o);
  o.kernel_size[0] = INT64_MAX;
  o.kernel_size[1] = 2;
  o.padding[0] = INT64_MAX / 2;
  OP_FAILS(of_avg_pool2d(s, x, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_avg_pool2d", "padding[0]", "overflows");
  OP_FAILS(of_max_pool2d(s, x, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_max_pool2d", "padding[0]", "overflows");

  of_tensor_release(x);
}

/* ---- views and layout ---------------------------------------------------------------------------------------- */

static void test_views(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  OP_EXPECT(of_reshape(s, x, (int64_t[]){3, 2}, 2, &r), F32, DIMS(3, 2), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_reshape(s, x, (int64_t[]){-1}, 1, &r), F32, DIMS(6), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_view(s, x, (int64_t[]){1, -1, 2}, 3, &r), F32, DIMS(1, 3, 2), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_flatten(s, x, 0, -1, &r), F32, DIMS(6), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_unsqueeze(s, x, 0, &r), F32, DIMS(1, 2, 3), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_unsqueeze(s, x, -1, &r), F32, DIMS(2, 3, 1), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_permute(s, x, (int64_t[]){1, 0}, 2, &r), F32, DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6), 0);
  OP_EXPECT(of_narrow(s, x, 1, 1, 2, &r), F32, DIMS(2, 2), VALS(2, 3, 5, 6), 0);
  OP_EXPECT(of_narrow(s, x, 0, -1, 1, &r), F32, DIMS(1, 3), VALS(4, 5, 6), 0);
  OP_EXPECT(of_contiguous(s, x, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6), 0);

  /* A transposed tensor: view needs contiguous strides; reshape and contiguous copy. */
  of_tensor_t* xt = NULL;
  ASSERT_OK(of_transpose(s, x, 0, 1, &xt));
  EXPECT_TENSOR(xt, F32, DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6), 0);
  OP_FAILS(of_view(s, xt, (int64_t[]){6}, 1, &r), OF_STATUS_INVALID_ARGUMENT, "of_view");
  OP_EXPECT(of_reshape(s, xt, (int64_t[]){6}, 1, &r), F32, DIMS(6), VALS(1, 4, 2, 5, 3, 6), 0);
  OP_EXPECT(of_contiguous(s, xt, &r), F32, DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6), 0);

  /* of_contiguous of a contiguous tensor is the tensor itself. */
  of_tensor_t* same = NULL;
  ASSERT_OK(of_contiguous(s, x, &same));
  assert_ptr_equal(same, x);
  of_tensor_release(same);

  of_tensor_t* y = make_tensor(s, F32, DIMS(2, 1, 3), VALS(1, 2, 3, 4, 5, 6));
  OP_EXPECT(of_flatten(s, y, 1, 2, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_squeeze(s, y, NULL, 0, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_squeeze(s, y, (int64_t[]){-2}, 1, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6), 0);

  const of_tensor_t* two[] = {x, x};
  OP_EXPECT(of_cat(s, two, 2, 0, &r), F32, DIMS(4, 3), VALS(1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_cat(s, two, 2, -1, &r), F32, DIMS(2, 6), VALS(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6), 0);
  OP_EXPECT(of_stack(s, two, 2, 0, &r), F32, DIMS(2, 2, 3), VALS(1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6), 0);
  OP_EXPECT(of_stack(s, two, 2, 2, &r), F32, DIMS(2, 3, 2), VALS(1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6), 0);

  of_tensor_t* row = make_tensor(s, F32, DIMS(3), VALS(1, 2, 3));
  of_tensor_t* col = make_tensor(s, F32, DIMS(2, 1), VALS(7, 8));
  OP_EXPECT(of_expand(s, row, (int64_t[]){2, 3}, 2, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 1, 2, 3), 0);
  OP_EXPECT(of_expand(s, col, (int64_t[]){-1, 3}, 2, &r), F32, DIMS(2, 3), VALS(7, 7, 7, 8, 8, 8), 0);

  /* Errors: element counts, unknown and symbolic dims in a target shape, bad dims, cat shapes. */
  OP_FAILS(of_reshape(s, x, (int64_t[]){4, 2}, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_reshape", "(2, 3)");
  OP_FAILS(of_reshape(s, x, (int64_t[]){OF_DIM_UNKNOWN, 2}, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_reshape");
  int64_t n_sym = 0;
  ASSERT_OK(of_session_dim_symbol(s, "N", &n_sym));
  OP_FAILS(of_expand(s, row, (int64_t[]){n_sym, 3}, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_expand");
  OP_FAILS(of_reshape(s, x, NULL, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_reshape", "dims");
  OP_FAILS(of_transpose(s, x, 0, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_transpose");
  OP_FAILS(of_permute(s, x, (int64_t[]){0, 0}, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_permute");
  OP_FAILS(of_squeeze(s, x, (int64_t[]){0}, 1, &r), OF_STATUS_INVALID_ARGUMENT, "of_squeeze");
  OP_FAILS(of_unsqueeze(s, x, 3, &r), OF_STATUS_INVALID_ARGUMENT, "of_unsqueeze");
  OP_FAILS(of_narrow(s, x, 1, 2, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_narrow");
  /* start + length overflows int64: the message names them, not the arithmetic. */
  OP_FAILS(of_narrow(s, x, 1, 1, INT64_MAX, &r), OF_STATUS_INVALID_ARGUMENT, "of_narrow", "start 1", "length",
           "9223372036854775807", "past the end");
  OP_FAILS(of_flatten(s, x, 1, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_flatten");
  OP_FAILS(of_expand(s, row, (int64_t[]){2, 4}, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_expand");
  /* Mixed dtypes promote in cat and stack, as the header says: int32 with float32 is float32. */
  {
    of_tensor_t* ints = make_tensor(s, I32, DIMS(1, 2), VALS(1, 2));
    of_tensor_t* floats = make_tensor(s, F32, DIMS(1, 2), VALS(0.5, 1.5));
    OP_EXPECT(of_cat(s, (const of_tensor_t* const[]){ints, floats}, 2, 0, &r), F32, DIMS(2, 2), VALS(1, 2, 0.5, 1.5), 0);
    OP_EXPECT(of_stack(s, (const of_tensor_t* const[]){ints, floats}, 2, 1, &r), F32, DIMS(1, 2, 2),
              VALS(1, 2, 0.5, 1.5), 0);
    of_tensor_t* bools = make_tensor(s, BOOL, DIMS(1, 2), VALS(1, 0));
    OP_EXPECT(of_cat(s, (const of_tensor_t* const[]){bools, ints}, 2, 1, &r), I32, DIMS(1, 4), VALS(1, 0, 1, 2), 0);
    of_tensor_release(bools);
    of_tensor_release(ints);
    of_tensor_release(floats);
  }
  const of_tensor_t* mismatched[] = {x, col};
  OP_FAILS(of_cat(s, mismatched, 2, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_cat");
  OP_FAILS(of_stack(s, mismatched, 2, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_stack");
  const of_tensor_t* with_null[] = {x, NULL};
  OP_FAILS(of_cat(s, with_null, 2, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_cat", "tensors[1]");
  OP_FAILS(of_cat(s, NULL, 2, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_cat", "tensors");
  OP_FAILS(of_cat(s, two, 0, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_cat");

  of_tensor_release(x);
  of_tensor_release(xt);
  of_tensor_release(y);
  of_tensor_release(row);
  of_tensor_release(col);
}

/* ---- softmax, losses, dropout ---------------------------------------------------------------------------------- */

static void test_softmax(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(2, 3), VALS(1, 2, 3, 1, 1, 1));
  const double z = exp(1) + exp(2) + exp(3);
  const double third = 1.0 / 3;
  OP_EXPECT(of_softmax(s, x, 1, &r), F64, DIMS(2, 3), VALS(exp(1) / z, exp(2) / z, exp(3) / z, third, third, third),
            1e-12);
  OP_EXPECT(of_log_softmax(s, x, -1, &r), F64, DIMS(2, 3),
            VALS(1 - log(z), 2 - log(z), 3 - log(z), -log(3), -log(3), -log(3)), 1e-12);
  /* Along dim 0: columns (1, 1), (2, 1), (3, 1). */
  const double e1 = exp(1), e2 = exp(2);
  OP_EXPECT(of_softmax(s, x, 0, &r), F64, DIMS(2, 3),
            VALS(0.5, e2 / (e2 + e1), e2 * e1 / (e2 * e1 + e1), 0.5, e1 / (e2 + e1), e1 / (e2 * e1 + e1)), 1e-12);
  /* Large logits stay finite. */
  of_tensor_t* big = make_tensor(s, F32, DIMS(2), VALS(1000, 1000));
  OP_EXPECT(of_softmax(s, big, 0, &r), F32, DIMS(2), VALS(0.5, 0.5), 1e-6);
  OP_FAILS(of_softmax(s, x, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_softmax");
  of_tensor_release(x);
  of_tensor_release(big);
}

static void test_losses(void** state) {
  of_session_t* s = *state;
  of_tensor_t* logits = make_tensor(s, F64, DIMS(2, 3), VALS(1, 2, 3, 1, 1, 1));
  of_tensor_t* target = make_tensor(s, I64, DIMS(2), VALS(2, 0));
  const double lse0 = log(exp(1) + exp(2) + exp(3)), lse1 = 1 + log(3);
  const double l0 = lse0 - 3, l1 = lse1 - 1;

  of_loss_options_t o;
  of_loss_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_true(o.reduction == OF_REDUCTION_MEAN && o.ignore_index == -100 && o.label_smoothing == 0);
  OP_EXPECT(of_cross_entropy(s, logits, target, NULL, &r), F64, DIMS0, VALS((l0 + l1) / 2), 1e-12);
  o.reduction = OF_REDUCTION_SUM;
  OP_EXPECT(of_cross_entropy(s, logits, target, &o, &r), F64, DIMS0, VALS(l0 + l1), 1e-12);
  o.reduction = OF_REDUCTION_NONE;
  OP_EXPECT(of_cross_entropy(s, logits, target, &o, &r), F64, DIMS(2), VALS(l0, l1), 1e-12);

  /* ignore_index: the ignored sample is neither summed nor counted in the mean. */
  of_tensor_t* ignored = make_tensor(s, I64, DIMS(2), VALS(2, -100));
  OP_EXPECT(of_cross_entropy(s, logits, ignored, NULL, &r), F64, DIMS0, VALS(l0), 1e-12);
  OP_EXPECT(of_cross_entropy(s, logits, ignored, &o, &r), F64, DIMS(2), VALS(l0, 0), 1e-12);
  of_loss_options_init(&o);
  o.ignore_index = 0;
  OP_EXPECT(of_cross_entropy(s, logits, target, &o, &r), F64, DIMS0, VALS(l0), 1e-12);

  /* Label smoothing 0.1 over C = 3: (1 - 0.1) * nll + 0.1 / 3 * sum over classes of -log p. */
  of_loss_options_init(&o);
  o.label_smoothing = 0.1;
  const double s0 = 0.9 * l0 + 0.1 / 3 * (3 * lse0 - 6), s1 = 0.9 * l1 + 0.1 / 3 * (3 * lse1 - 3);
  OP_EXPECT(of_cross_entropy(s, logits, target, &o, &r), F64, DIMS0, VALS((s0 + s1) / 2), 1e-12);

  of_tensor_t* logp = make_tensor(s, F32, DIMS(2, 3), VALS(-1, -2, -3, -0.5, -1.5, -2.5));
  of_tensor_t* t2 = make_tensor(s, I64, DIMS(2), VALS(0, 2));
  OP_EXPECT(of_nll_loss(s, logp, t2, NULL, &r), F32, DIMS0, VALS(1.75), 1e-6);
  of_loss_options_init(&o);
  o.reduction = OF_REDUCTION_NONE;
  OP_EXPECT(of_nll_loss(s, logp, t2, &o, &r), F32, DIMS(2), VALS(1, 2.5), 1e-6);

  /* Errors: a float target, a bad reduction, smoothing in nll_loss, uninitialised options, shapes. */
  of_tensor_t* ftarget = make_tensor(s, F32, DIMS(2), VALS(2, 0));
  OP_FAILS(of_cross_entropy(s, logits, ftarget, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_cross_entropy",
           "target");
  of_loss_options_init(&o);
  o.reduction = 7;
  OP_FAILS(of_cross_entropy(s, logits, target, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_cross_entropy",
           "options->reduction");
  of_loss_options_init(&o);
  o.label_smoothing = 0.5;
  OP_FAILS(of_nll_loss(s, logp, t2, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_nll_loss", "options->label_smoothing");
  o.struct_size = 0;
  OP_FAILS(of_cross_entropy(s, logits, target, &o, &r), OF_STATUS_INVALID_ARGUMENT, "struct_size");
  of_tensor_t* t3 = make_tensor(s, I64, DIMS(3), VALS(0, 1, 2));
  OP_FAILS(of_cross_entropy(s, logits, t3, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_cross_entropy", "target");
  of_tensor_t* out_of_range = make_tensor(s, I64, DIMS(2), VALS(3, 0));
  of_tensor_t* r = OUT_SENTINEL;
  ASSERT_STATUS2(of_cross_entropy(s, logits, out_of_range, NULL, &r), OF_STATUS_INVALID_ARGUMENT,
                 OF_STATUS_OUT_OF_RANGE, "of_cross_entropy", "target");
  assert_ptr_equal(r, OUT_SENTINEL);

  of_tensor_release(logits);
  of_tensor_release(target);
  of_tensor_release(ignored);
  of_tensor_release(logp);
  of_tensor_release(t2);
  of_tensor_release(ftarget);
  of_tensor_release(t3);
  of_tensor_release(out_of_range);
}

static void test_dropout(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = NULL;
  ASSERT_OK(of_tensor_ones(s, F32, (int64_t[]){1000}, 1, NULL, &x));

  ASSERT_OK(of_session_manual_seed(s, 7));
  of_tensor_t* d1 = NULL;
  ASSERT_OK(of_dropout(s, x, 0.5, 1, &d1));
  size_t n = 0;
  double* v = of_test_values(d1, &n);
  assert_int_equal(n, 1000);
  int zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    assert_true(v[i] == 0 || v[i] == 2);
    zeros += v[i] == 0;
  }
  assert_in_range(zeros, 400, 600);
  free(v);
  /* Reproducible under a seed. */
  ASSERT_OK(of_session_manual_seed(s, 7));
  of_tensor_t* d2 = NULL;
  ASSERT_OK(of_dropout(s, x, 0.5, 1, &d2));
  of_test_assert_same_bytes(d1, d2);

  /* Identity in inference and for p 0; all zeros for p 1. */
  of_tensor_t* same = NULL;
  ASSERT_OK(of_dropout(s, x, 0.5, 0, &same));
  of_test_assert_same_bytes(same, x);
  of_tensor_release(same);
  ASSERT_OK(of_dropout(s, x, 0, 1, &same));
  of_test_assert_same_bytes(same, x);
  of_tensor_release(same);
  of_tensor_t* zero = NULL;
  ASSERT_OK(of_tensor_zeros(s, F32, (int64_t[]){1000}, 1, NULL, &zero));
  ASSERT_OK(of_dropout(s, x, 1, 1, &same));
  of_test_assert_same_bytes(same, zero);
  of_tensor_release(same);

  OP_FAILS(of_dropout(s, x, 1.5, 1, &r), OF_STATUS_INVALID_ARGUMENT, "of_dropout");
  OP_FAILS(of_dropout(s, x, -0.1, 1, &r), OF_STATUS_INVALID_ARGUMENT, "of_dropout");
  OP_FAILS(of_dropout(s, x, 0.5, 3, &r), OF_STATUS_INVALID_ARGUMENT, "of_dropout", "training");

  of_tensor_release(x);
  of_tensor_release(d1);
  of_tensor_release(d2);
  of_tensor_release(zero);
}

static void test_filled_like(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, I32, DIMS(2, 2), VALS(5, 6, 7, 8));
  OP_EXPECT(of_zeros_like(s, x, &r), I32, DIMS(2, 2), VALS(0, 0, 0, 0), 0);
  OP_EXPECT(of_ones_like(s, x, &r), I32, DIMS(2, 2), VALS(1, 1, 1, 1), 0);
  OP_EXPECT(of_full_like(s, x, -3, &r), I32, DIMS(2, 2), VALS(-3, -3, -3, -3), 0);
  of_tensor_t* f = make_tensor(s, F64, DIMS0, VALS(1));
  OP_EXPECT(of_full_like(s, f, 0.1, &r), F64, DIMS0, VALS(0.1), 0);
  OP_FAILS(of_full_like(s, x, 2.5, &r), OF_STATUS_INVALID_ARGUMENT, "of_full_like");
  of_tensor_release(x);
  of_tensor_release(f);
}

/* ---- the registry ---------------------------------------------------------------------------------------------- */

static void test_registry(void** state) {
  (void)state;
  size_t count = 0;
  ASSERT_OK(of_op_count(&count));
  assert_true(count >= 50);
  int saw_add = 0, saw_conv2d = 0;
  const char* previous = "";
  for (size_t i = 0; i < count; ++i) {
    const char* name = NULL;
    ASSERT_OK(of_op_name(i, &name));
    assert_non_null(name);
    assert_true(strcmp(previous, name) < 0); /* sorted, no repeats */
    saw_add |= strcmp(name, "add") == 0;
    saw_conv2d |= strcmp(name, "conv2d") == 0;
    previous = name;
  }
  assert_true(saw_add && saw_conv2d);
  const char* name = SENTINEL_PTR(const char*);
  ASSERT_STATUS(of_op_name(count, &name), OF_STATUS_OUT_OF_RANGE, "of_op_name");
  assert_ptr_equal(name, SENTINEL_PTR(const char*));
  ASSERT_STATUS(of_op_name(0, NULL), OF_STATUS_INVALID_ARGUMENT, "out_name");
  ASSERT_STATUS(of_op_count(NULL), OF_STATUS_INVALID_ARGUMENT, "out_count");
}

/* ---- errors common to every op ------------------------------------------------------------------------------- */

static void test_common_errors(void** state) {
  of_session_t* s = *state;
  of_tensor_t* a = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* b = make_tensor(s, F32, DIMS(4, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
  OP_FAILS(of_add(NULL, a, a, &r), OF_STATUS_INVALID_ARGUMENT, "of_add", "session");
  OP_FAILS(of_add(s, NULL, a, &r), OF_STATUS_INVALID_ARGUMENT, "of_add", "a");
  OP_FAILS(of_add(s, a, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_add", "b");
  OP_FAILS(of_relu(s, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_relu", "x");
  OP_FAILS(of_add_scalar(NULL, a, 1, &r), OF_STATUS_INVALID_ARGUMENT, "of_add_scalar", "session");
  ASSERT_STATUS(of_add(s, a, a, NULL), OF_STATUS_INVALID_ARGUMENT, "of_add", "out_tensor");
  ASSERT_STATUS(of_sum(s, a, NULL, 0, 0, NULL), OF_STATUS_INVALID_ARGUMENT, "of_sum", "out_tensor");
  /* Shapes that do not broadcast: the message names both. */
  OP_FAILS(of_add(s, a, b, &r), OF_STATUS_INVALID_ARGUMENT, "of_add", "(2, 3)", "(4, 3)");
  OP_FAILS(of_mul(s, b, a, &r), OF_STATUS_INVALID_ARGUMENT, "of_mul", "(4, 3)", "(2, 3)");
  OP_FAILS(of_gt(s, a, b, &r), OF_STATUS_INVALID_ARGUMENT, "of_gt", "(2, 3)", "(4, 3)");
  /* Wrong dtypes: bool inputs to ops that need numbers or floats. */
  of_tensor_t* flags = make_tensor(s, BOOL, DIMS(2), VALS(1, 0));
  OP_FAILS(of_softmax(s, flags, 0, &r), OF_STATUS_INVALID_ARGUMENT, "of_softmax");
  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(flags);
}

/* Ops of different sessions at once from one thread, and a result that outlives its session. */
static void test_sessions(void** state) {
  (void)state;
  of_session_options_t options;
  of_session_options_init(&options);
  options.num_threads = 1;
  of_session_t* one = NULL;
  ASSERT_OK(of_session_create(&options, &one));
  of_session_t* other = of_test_session();
  of_tensor_t* x = make_tensor(one, F32, DIMS(3), VALS(1, 2, 3));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_mul(one, x, x, &y));
  of_session_destroy(one);
  OP_EXPECT(of_add(other, x, y, &r), F32, DIMS(3), VALS(2, 6, 12), 0);
  of_session_destroy(other);
  of_tensor_release(x);
  of_tensor_release(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_binary_broadcasting, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_binary_promotion, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_scalar_ops, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_comparisons, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_where_and_logic, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_unary, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_cast, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_reductions, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_matmul_linear, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_conv2d, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_batch_norm, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_pooling, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_views, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_softmax, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_losses, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_dropout, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_filled_like, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test(test_registry),
      cmocka_unit_test_setup_teardown(test_common_errors, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test(test_sessions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
