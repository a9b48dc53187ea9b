/* CMocka tests of the attention op of the C ABI: of_scaled_dot_product_attention on small inputs worked
 * out by hand, its options, dropout's reproducibility, and the error paths. */
#include "capi_op_util.h"

static void test_attention_values(void** state) {
  of_session_t* s = *state;
  const double e = exp(1.0);
  of_tensor_t* q = make_tensor(s, F64, DIMS(1, 2), VALS(1, 0));
  of_tensor_t* k = make_tensor(s, F64, DIMS(2, 2), VALS(1, 0, 0, 1));
  of_tensor_t* v = make_tensor(s, F64, DIMS(2, 1), VALS(10, 20));
  of_attention_options_t o;
  of_attention_options_init(&o);
  assert_int_equal(o.struct_size, sizeof(of_attention_options_t));
  assert_true(o.dropout_p == 0 && o.is_causal == 0 && o.scale == 0);
  /* Default scale 1/sqrt(2): weights exp(1/sqrt 2) and 1. */
  const double w = exp(1 / sqrt(2.0));
  OP_EXPECT(of_scaled_dot_product_attention(s, q, k, v, NULL, NULL, &r), F64, DIMS(1, 1), VALS((10 * w + 20) / (w + 1)),
            1e-12);
  o.scale = 1;
  OP_EXPECT(of_scaled_dot_product_attention(s, q, k, v, NULL, &o, &r), F64, DIMS(1, 1), VALS((10 * e + 20) / (e + 1)),
            1e-12);
  /* A bool mask (true = attend) and an additive one. */
  of_tensor_t* bmask = make_tensor(s, BOOL, DIMS(1, 2), VALS(1, 0));
  OP_EXPECT(of_scaled_dot_product_attention(s, q, k, v, bmask, &o, &r), F64, DIMS(1, 1), VALS(10), 1e-12);
  of_tensor_t* fmask = make_tensor(s, F64, DIMS(2), VALS(0, 1));
  OP_EXPECT(of_scaled_dot_product_attention(s, q, k, v, fmask, &o, &r), F64, DIMS(1, 1), VALS(15), 1e-12);
  /* Causal: query 0 sees key 0 only; query 1 both (scores 1 and 2). */
  of_tensor_t* q2 = make_tensor(s, F32, DIMS(1, 2, 1), VALS(1, 1));
  of_tensor_t* k2 = make_tensor(s, F32, DIMS(1, 2, 1), VALS(1, 2));
  of_tensor_t* v2 = make_tensor(s, F32, DIMS(1, 2, 1), VALS(10, 20));
  o.is_causal = 1;
  OP_EXPECT(of_scaled_dot_product_attention(s, q2, k2, v2, NULL, &o, &r), F32, DIMS(1, 2, 1),
            VALS(10, (10 + 20 * e) / (1 + e)), 1e-6);
  of_tensor_release(q);
  of_tensor_release(k);
  of_tensor_release(v);
  of_tensor_release(bmask);
  of_tensor_release(fmask);
  of_tensor_release(q2);
  of_tensor_release(k2);
  of_tensor_release(v2);
}

static void test_attention_dropout(void** state) {
  of_session_t* s = *state;
  of_tensor_t* q = NULL;
  of_tensor_t* k = NULL;
  of_tensor_t* v = NULL;
  const int64_t qd[] = {2, 8, 4}, vd[] = {2, 16, 4};
  ASSERT_OK(of_tensor_rand(s, F32, qd, 3, NULL, &q));
  ASSERT_OK(of_tensor_rand(s, F32, vd, 3, NULL, &k));
  ASSERT_OK(of_tensor_rand(s, F32, vd, 3, NULL, &v));
  of_attention_options_t o;
  of_attention_options_init(&o);
  o.dropout_p = 0.5;
  of_tensor_t* a = NULL;
  of_tensor_t* b = NULL;
  ASSERT_OK(of_session_manual_seed(s, 11));
  ASSERT_OK(of_scaled_dot_product_attention(s, q, k, v, NULL, &o, &a));
  ASSERT_OK(of_session_manual_seed(s, 11));
  ASSERT_OK(of_scaled_dot_product_attention(s, q, k, v, NULL, &o, &b));
  size_t na = 0, nb = 0;
  double* va = of_test_values(a, &na);
  double* vb = of_test_values(b, &nb);
  assert_int_equal(na, 64);
  assert_int_equal(nb, 64);
  for (size_t i = 0; i < na; ++i) assert_true(va[i] == vb[i]);
  free(va);
  free(vb);
  of_tensor_release(a);
  of_tensor_release(b);
  of_tensor_release(q);
  of_tensor_release(k);
  of_tensor_release(v);
}

static void test_attention_errors(void** state) {
  of_session_t* s = *state;
  of_tensor_t* q = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* k = make_tensor(s, F32, DIMS(1, 3), VALS(1, 2, 3));
  of_tensor_t* k4 = make_tensor(s, F32, DIMS(1, 4), VALS(1, 2, 3, 4));
  of_tensor_t* mask = make_tensor(s, BOOL, DIMS(2, 1), VALS(1, 1));
  of_attention_options_t o;
  of_attention_options_init(&o);
  OP_FAILS(of_scaled_dot_product_attention(NULL, q, k, k, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "session");
  OP_FAILS(of_scaled_dot_product_attention(s, NULL, k, k, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "q");
  ASSERT_STATUS(of_scaled_dot_product_attention(s, q, k, k, NULL, NULL, NULL), OF_STATUS_INVALID_ARGUMENT,
                "out_tensor");
  OP_FAILS(of_scaled_dot_product_attention(s, q, k4, k4, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT,
           "scaled_dot_product_attention", "embedding size");
  o.is_causal = 1;
  OP_FAILS(of_scaled_dot_product_attention(s, q, k, k, mask, &o, &r), OF_STATUS_INVALID_ARGUMENT,
           "attn_mask and is_causal");
  o.is_causal = 2;
  OP_FAILS(of_scaled_dot_product_attention(s, q, k, k, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "is_causal");
  o.is_causal = 0;
  o.dropout_p = 1;
  OP_FAILS(of_scaled_dot_product_attention(s, q, k, k, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "dropout_p");
  o.dropout_p = 0;
  o.struct_size = 0;
  OP_FAILS(of_scaled_dot_product_attention(s, q, k, k, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "struct_size");
  of_attention_options_init(NULL);
  of_tensor_release(q);
  of_tensor_release(k);
  of_tensor_release(k4);
  of_tensor_release(mask);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_attention_values, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_attention_dropout, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_attention_errors, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
