/* CMocka tests of the window family of the C ABI (of_max_pool2d_with_indices, of_max_unpool2d) on
 * small inputs whose results are worked out by hand here, gradients through of_tensor_backward, and
 * the error paths. */
#include "capi_op_util.h"

#define INVALID OF_STATUS_INVALID_ARGUMENT

/* x[i][j] = 4 i + j + 1. */
static of_tensor_t* grid(of_session_t* s) {
  return make_tensor(s, F32, DIMS(1, 1, 4, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
}

static void test_max_pool2d_with_indices(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = grid(s);
  of_pool2d_options_t o;
  of_pool2d_options_init(&o);
  o.kernel_size[0] = o.kernel_size[1] = 2;
  of_tensor_t* v = NULL;
  of_tensor_t* i = NULL;
  ASSERT_OK(of_max_pool2d_with_indices(s, x, &o, &v, &i));
  EXPECT_TENSOR(v, F32, DIMS(1, 1, 2, 2), VALS(6, 8, 14, 16), 0);
  EXPECT_TENSOR(i, I64, DIMS(1, 1, 2, 2), VALS(5, 7, 13, 15), 0);
  of_tensor_release(v);
  of_tensor_release(i);

  /* Asymmetric padding: kernel 3, stride 2, padding after the input only. */
  o.kernel_size[0] = o.kernel_size[1] = 3;
  o.stride[0] = o.stride[1] = 2;
  o.padding_end[0] = o.padding_end[1] = 1;
  ASSERT_OK(of_max_pool2d_with_indices(s, x, &o, &v, &i));
  EXPECT_TENSOR(v, F32, DIMS(1, 1, 2, 2), VALS(11, 12, 15, 16), 0);
  EXPECT_TENSOR(i, I64, DIMS(1, 1, 2, 2), VALS(10, 11, 14, 15), 0);
  of_tensor_release(v);
  of_tensor_release(i);

  /* Ties: the first maximum; NaN: the last NaN. */
  of_tensor_t* t = make_tensor(s, F64, DIMS(1, 1, 2, 4), VALS(5, 1, NAN, 2, 5, 5, 3, NAN));
  of_pool2d_options_init(&o);
  o.kernel_size[0] = o.kernel_size[1] = 2;
  ASSERT_OK(of_max_pool2d_with_indices(s, t, &o, &v, &i));
  EXPECT_TENSOR(v, F64, DIMS(1, 1, 1, 2), VALS(5, NAN), 0);
  EXPECT_TENSOR(i, I64, DIMS(1, 1, 1, 2), VALS(0, 7), 0);
  of_tensor_release(v);
  of_tensor_release(i);
  of_tensor_release(t);

  /* The values' gradient goes back to the maxima. */
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_max_pool2d_with_indices(s, x, &o, &v, &i));
  of_tensor_t* total = NULL;
  ASSERT_OK(of_sum(s, v, NULL, 0, 0, &total));
  ASSERT_OK(of_tensor_backward(s, total, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F32, DIMS(1, 1, 4, 4), VALS(0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1), 0);
  of_tensor_release(g);
  of_tensor_release(total);
  of_tensor_release(v);
  of_tensor_release(i);

  /* Errors: no options, NULL results, a bad padding_end; nothing is written. */
  v = OUT_SENTINEL;
  i = OUT_SENTINEL;
  ASSERT_STATUS(of_max_pool2d_with_indices(s, x, NULL, &v, &i), INVALID, "of_max_pool2d_with_indices", "options");
  ASSERT_STATUS(of_max_pool2d_with_indices(s, x, &o, &v, NULL), INVALID, "of_max_pool2d_with_indices",
                "out_indices");
  ASSERT_STATUS(of_max_pool2d_with_indices(s, NULL, &o, &v, &i), INVALID, "of_max_pool2d_with_indices", "x");
  o.padding_end[1] = 2;
  ASSERT_STATUS(of_max_pool2d_with_indices(s, x, &o, &v, &i), INVALID, "max_pool2d", "padding_end", "half");
  ASSERT_STATUS(of_max_pool2d_with_indices(NULL, x, &o, &v, &i), INVALID, "session");
  assert_ptr_equal(v, OUT_SENTINEL);
  assert_ptr_equal(i, OUT_SENTINEL);
  of_tensor_release(x);
}

static void test_max_unpool2d(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 2, 2), VALS(6, 8, 14, 16));
  of_tensor_t* idx = make_tensor(s, I64, DIMS(1, 1, 2, 2), VALS(5, 7, 13, 15));
  of_pool2d_options_t o;
  of_pool2d_options_init(&o);
  o.kernel_size[0] = o.kernel_size[1] = 2;
  /* The default size (2 - 1) * 2 + 2 = 4. */
  OP_EXPECT(of_max_unpool2d(s, x, idx, &o, NULL, 0, &r), F32, DIMS(1, 1, 4, 4),
            VALS(0, 0, 0, 0, 0, 6, 0, 8, 0, 0, 0, 0, 0, 14, 0, 16), 0);
  /* (H, W) = (5, 5): the flat positions in a 5-wide plane; (N, C, H, W) takes the last two. */
  OP_EXPECT(of_max_unpool2d(s, x, idx, &o, DIMS(5, 5), &r), F32, DIMS(1, 1, 5, 5),
            VALS(0, 0, 0, 0, 0, 6, 0, 8, 0, 0, 0, 0, 0, 14, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0), 0);
  OP_EXPECT(of_max_unpool2d(s, x, idx, &o, DIMS(1, 1, 3, 6), &r), F32, DIMS(1, 1, 3, 6),
            VALS(0, 0, 0, 0, 0, 6, 0, 8, 0, 0, 0, 0, 0, 14, 0, 16, 0, 0), 0);
  /* Integers too. */
  of_tensor_t* xi = make_tensor(s, I32, DIMS(1, 1, 1, 2), VALS(-3, 7));
  of_tensor_t* ii = make_tensor(s, I64, DIMS(1, 1, 1, 2), VALS(3, 0));
  OP_EXPECT(of_max_unpool2d(s, xi, ii, &o, NULL, 0, &r), I32, DIMS(1, 1, 2, 4), VALS(7, 0, 0, -3, 0, 0, 0, 0), 0);
  of_tensor_release(xi);
  of_tensor_release(ii);

  /* The gradient gathers at the indices: sum(y) gives ones. */
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_max_unpool2d(s, x, idx, &o, NULL, 0, &y));
  of_tensor_t* w = make_tensor(s, F32, DIMS(1, 1, 4, 4), VALS(0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4));
  of_tensor_t* prod = NULL;
  ASSERT_OK(of_mul(s, y, w, &prod));
  of_tensor_t* total = NULL;
  ASSERT_OK(of_sum(s, prod, NULL, 0, 0, &total));
  ASSERT_OK(of_tensor_backward(s, total, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F32, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4), 0);
  of_tensor_release(g);
  of_tensor_release(total);
  of_tensor_release(prod);
  of_tensor_release(w);
  of_tensor_release(y);

  /* Errors: an index outside the plane (named by position), sizes, NULLs. */
  of_tensor_t* bad = make_tensor(s, I64, DIMS(1, 1, 2, 2), VALS(5, 7, 13, 16));
  OP_FAILS(of_max_unpool2d(s, x, bad, &o, NULL, 0, &r), INVALID, "of_max_unpool2d", "indices[0, 0, 1, 1] = 16");
  of_tensor_release(bad);
  OP_FAILS(of_max_unpool2d(s, x, idx, &o, DIMS(1, 4, 4), &r), INVALID, "of_max_unpool2d", "output_size", "got 3");
  OP_FAILS(of_max_unpool2d(s, x, idx, &o, DIMS(9, 4), &r), INVALID, "of_max_unpool2d", "output_size", "within stride");
  OP_FAILS(of_max_unpool2d(s, x, idx, &o, NULL, 2, &r), INVALID, "of_max_unpool2d", "output_size");
  OP_FAILS(of_max_unpool2d(s, x, idx, NULL, NULL, 0, &r), INVALID, "of_max_unpool2d", "options");
  OP_FAILS(of_max_unpool2d(s, x, NULL, &o, NULL, 0, &r), INVALID, "of_max_unpool2d", "indices");
  OP_FAILS(of_max_unpool2d(s, x, x, &o, NULL, 0, &r), INVALID, "of_max_unpool2d", "int64");
  ASSERT_STATUS(of_max_unpool2d(s, x, idx, &o, NULL, 0, NULL), INVALID, "of_max_unpool2d", "out_tensor");
  of_tensor_release(idx);
  of_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_max_pool2d_with_indices, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_max_unpool2d, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
