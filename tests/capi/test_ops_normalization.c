/* CMocka tests of the normalization ops of the C ABI (of_layer_norm, of_group_norm,
 * of_instance_norm) on small inputs worked out by hand, and their error statuses. */
#include "capi_op_util.h"

/* sqrt(3/2): a row (a - d, a, a + d) normalises to (-k, 0, k). */
#define K 1.224744871391589

static void test_layer_norm(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 6, 8));
  of_tensor_t* w = make_tensor(s, F32, DIMS(3), VALS(1, 2, 3));
  of_tensor_t* b = make_tensor(s, F32, DIMS(3), VALS(0, 0, 1));
  OP_EXPECT(of_layer_norm(s, x, DIMS(3), NULL, NULL, 0.0, &r), F32, DIMS(2, 3), VALS(-K, 0, K, -K, 0, K), 1e-5);
  OP_EXPECT(of_layer_norm(s, x, DIMS(3), w, b, 0.0, &r), F32, DIMS(2, 3), VALS(-K, 0, 3 * K + 1, -K, 0, 3 * K + 1), 1e-5);
  /* Over both dims: mean 4, var 34 / 6. */
  const double k = 1 / sqrt(34.0 / 6);
  OP_EXPECT(of_layer_norm(s, x, DIMS(2, 3), NULL, NULL, 0.0, &r), F32, DIMS(2, 3),
            VALS(-3 * k, -2 * k, -k, 0, 2 * k, 4 * k), 1e-5);

  OP_FAILS(of_layer_norm(NULL, x, DIMS(3), NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "of_layer_norm", "session");
  OP_FAILS(of_layer_norm(s, NULL, DIMS(3), NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "of_layer_norm", "x");
  OP_FAILS(of_layer_norm(s, x, NULL, 1, NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "of_layer_norm",
           "normalized_shape");
  OP_FAILS(of_layer_norm(s, x, DIMS(2), NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "layer_norm",
           "normalized_shape (2,) must be the last dims of x");
  OP_FAILS(of_layer_norm(s, x, DIMS(3), b, x, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "layer_norm", "bias must have shape (3,)");
  OP_FAILS(of_layer_norm(s, x, DIMS(3), NULL, NULL, -1.0, &r), OF_STATUS_INVALID_ARGUMENT, "layer_norm", "eps");
  ASSERT_STATUS(of_layer_norm(s, x, DIMS(3), NULL, NULL, 1e-5, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");

  of_tensor_t* ints = make_tensor(s, I64, DIMS(3), VALS(1, 2, 3));
  OP_FAILS(of_layer_norm(s, ints, DIMS(3), NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "layer_norm", "floating point");
  of_tensor_release(ints);
  of_tensor_release(x);
  of_tensor_release(w);
  of_tensor_release(b);
}

static void test_group_norm(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(1, 4, 1), VALS(1, 2, 3, 4));
  of_tensor_t* w = make_tensor(s, F64, DIMS(4), VALS(1, 1, 2, 2));
  OP_EXPECT(of_group_norm(s, x, 2, w, NULL, 0.0, &r), F64, DIMS(1, 4, 1), VALS(-1, 1, -2, 2), 1e-12);
  /* One group: mean 2.5, var 1.25. */
  const double k = 1 / sqrt(1.25);
  OP_EXPECT(of_group_norm(s, x, 1, NULL, NULL, 0.0, &r), F64, DIMS(1, 4, 1), VALS(-1.5 * k, -0.5 * k, 0.5 * k, 1.5 * k),
            1e-12);
  OP_FAILS(of_group_norm(s, x, 3, NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "group_norm",
           "not divisible into num_groups 3");
  OP_FAILS(of_group_norm(s, x, 0, NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "group_norm", "num_groups");
  OP_FAILS(of_group_norm(s, x, 2, x, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "group_norm", "weight");
  of_tensor_release(x);
  of_tensor_release(w);
}

static void test_instance_norm(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 2, 2), VALS(1, 3, 5, 9));
  of_tensor_t* b = make_tensor(s, F32, DIMS(2), VALS(0, 10));
  OP_EXPECT(of_instance_norm(s, x, NULL, b, 0.0, &r), F32, DIMS(1, 2, 2), VALS(-1, 1, 9, 11), 1e-6);
  of_tensor_t* flat = make_tensor(s, F32, DIMS(2, 2), VALS(1, 2, 3, 4));
  OP_FAILS(of_instance_norm(s, flat, NULL, NULL, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "instance_norm", "spatial");
  OP_FAILS(of_instance_norm(s, x, NULL, flat, 1e-5, &r), OF_STATUS_INVALID_ARGUMENT, "instance_norm", "bias");
  of_tensor_release(x);
  of_tensor_release(b);
  of_tensor_release(flat);
}

/* Gradients through the C ABI: d/dbias of sum(layer_norm) is the number of rows per parameter. */
static void test_layer_norm_gradient(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(2, 3), VALS(1, 2, 3, 4, 6, 8));
  of_tensor_t* b = make_tensor(s, F64, DIMS(3), VALS(0, 0, 0));
  ASSERT_OK(of_tensor_set_requires_grad(b, 1));
  of_tensor_t* y = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_layer_norm(s, x, DIMS(3), NULL, b, 1e-5, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(b, &g));
  EXPECT_TENSOR(g, F64, DIMS(3), VALS(2, 2, 2), 1e-12);
  of_tensor_release(g);
  of_tensor_release(loss);
  of_tensor_release(y);
  of_tensor_release(b);
  of_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_layer_norm, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_group_norm, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_instance_norm, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_layer_norm_gradient, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
