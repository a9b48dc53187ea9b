/* CMocka tests of the 3-D, transposed and 1-D convolutions of the C ABI (of_conv3d, of_conv_transpose2d,
 * of_conv1d, of_conv_transpose1d) on small inputs worked out by hand, a gradient, and their error statuses. */
#include "capi_op_util.h"

static void test_conv_transpose2d(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  of_tensor_t* w = make_tensor(s, F32, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  of_tensor_t* ones = make_tensor(s, F32, DIMS(1, 1, 2, 2), VALS(1, 1, 1, 1));
  of_tensor_t* bias = make_tensor(s, F32, DIMS(1), VALS(0.5));
  /* y[oy][ox] = sum of x[iy][ix] * w[oy - iy][ox - ix]. */
  OP_EXPECT(of_conv_transpose2d(s, x, w, NULL, NULL, &r), F32, DIMS(1, 1, 3, 3), VALS(1, 4, 4, 6, 20, 16, 9, 24, 16), 0);

  of_conv_transpose2d_options_t o;
  of_conv_transpose2d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_true(o.stride[0] == 1 && o.stride[1] == 1 && o.padding[0] == 0 && o.padding[1] == 0);
  assert_true(o.output_padding[0] == 0 && o.output_padding[1] == 0);
  assert_true(o.dilation[0] == 1 && o.dilation[1] == 1 && o.groups == 1);
  /* Stride 2 with a 2x2 kernel of ones: each x element fills its own 2x2 block. */
  o.stride[0] = o.stride[1] = 2;
  OP_EXPECT(of_conv_transpose2d(s, x, ones, bias, &o, &r), F32, DIMS(1, 1, 4, 4),
            VALS(1.5, 1.5, 2.5, 2.5, 1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 4.5, 4.5, 3.5, 3.5, 4.5, 4.5), 0);
  /* output_padding 1 adds a row and a column that no tap reaches: the bias. */
  o.output_padding[0] = o.output_padding[1] = 1;
  OP_EXPECT(of_conv_transpose2d(s, x, ones, bias, &o, &r), F32, DIMS(1, 1, 5, 5),
            VALS(1.5, 1.5, 2.5, 2.5, 0.5, 1.5, 1.5, 2.5, 2.5, 0.5, 3.5, 3.5, 4.5, 4.5, 0.5, 3.5, 3.5, 4.5, 4.5, 0.5,
                 0.5, 0.5, 0.5, 0.5, 0.5),
            0);
  /* padding 1 crops one row and column from each side. */
  of_conv_transpose2d_options_init(&o);
  o.stride[0] = o.stride[1] = 2;
  o.padding[0] = o.padding[1] = 1;
  OP_EXPECT(of_conv_transpose2d(s, x, ones, NULL, &o, &r), F32, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4), 0);
  /* Groups 2: each channel scaled by its own 1x1 kernel. */
  of_tensor_t* x2 = make_tensor(s, F64, DIMS(1, 2, 1, 1), VALS(1, 2));
  of_tensor_t* w2 = make_tensor(s, F64, DIMS(2, 1, 1, 1), VALS(3, 4));
  of_conv_transpose2d_options_init(&o);
  o.groups = 2;
  OP_EXPECT(of_conv_transpose2d(s, x2, w2, NULL, &o, &r), F64, DIMS(1, 2, 1, 1), VALS(3, 8), 0);

  /* Errors: channel mismatch, bad attributes, an options struct that was not initialised, NULLs. */
  of_tensor_t* w2f = make_tensor(s, F32, DIMS(2, 1, 1, 1), VALS(3, 4));
  OP_FAILS(of_conv_transpose2d(s, x, w2f, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose2d",
           "conv_transpose2d", "1 channels", "weight.shape[0] = 2");
  of_tensor_release(w2f);
  of_conv_transpose2d_options_init(&o);
  o.stride[1] = 0;
  OP_FAILS(of_conv_transpose2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose2d", "stride");
  of_conv_transpose2d_options_init(&o);
  o.output_padding[0] = 1;
  OP_FAILS(of_conv_transpose2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose2d",
           "output_padding[0]", "smaller than stride[0]");
  of_conv_transpose2d_options_init(&o);
  o.struct_size = 0;
  OP_FAILS(of_conv_transpose2d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose2d", "struct_size");
  OP_FAILS(of_conv_transpose2d(s, x, NULL, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose2d", "weight");
  OP_FAILS(of_conv_transpose2d(NULL, x, w, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose2d", "session");
  ASSERT_STATUS(of_conv_transpose2d(s, x, w, NULL, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  of_tensor_t* xi = make_tensor(s, I64, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  OP_FAILS(of_conv_transpose2d(s, xi, xi, NULL, NULL, &r), OF_STATUS_UNIMPLEMENTED, "of_conv_transpose2d",
           "conv_transpose2d", "int64");

  of_tensor_release(xi);
  of_tensor_release(x2);
  of_tensor_release(w2);
  of_tensor_release(bias);
  of_tensor_release(ones);
  of_tensor_release(w);
  of_tensor_release(x);
}

/* Gradients through the C ABI: with a 2x2 kernel of ones, each x element reaches 4 outputs and the
 * bias all 9. */
static void test_conv_transpose2d_gradient(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  of_tensor_t* w = make_tensor(s, F64, DIMS(1, 1, 2, 2), VALS(1, 1, 1, 1));
  of_tensor_t* b = make_tensor(s, F64, DIMS(1), VALS(0));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_tensor_set_requires_grad(b, 1));
  of_tensor_t* y = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_conv_transpose2d(s, x, w, b, NULL, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F64, DIMS(1, 1, 2, 2), VALS(4, 4, 4, 4), 1e-12);
  of_tensor_release(g);
  ASSERT_OK(of_tensor_grad(b, &g));
  EXPECT_TENSOR(g, F64, DIMS(1), VALS(9), 1e-12);
  of_tensor_release(g);
  of_tensor_release(loss);
  of_tensor_release(y);
  of_tensor_release(b);
  of_tensor_release(w);
  of_tensor_release(x);
}

static void test_conv1d(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 5), VALS(1, 2, 3, 4, 5));
  of_tensor_t* w = make_tensor(s, F32, DIMS(1, 1, 2), VALS(1, -1));
  of_tensor_t* bias = make_tensor(s, F32, DIMS(1), VALS(10));
  /* y[i] = x[i] - x[i + 1]. */
  OP_EXPECT(of_conv1d(s, x, w, NULL, NULL, &r), F32, DIMS(1, 1, 4), VALS(-1, -1, -1, -1), 0);
  OP_EXPECT(of_conv1d(s, x, w, bias, NULL, &r), F32, DIMS(1, 1, 4), VALS(9, 9, 9, 9), 0);

  of_conv1d_options_t o;
  of_conv1d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_true(o.stride == 1 && o.padding == 0 && o.dilation == 1 && o.groups == 1);
  /* Stride 2, padding 1: windows over (0, 1, 2, 3, 4, 5, 0) at 0, 2, 4. */
  o.stride = 2;
  o.padding = 1;
  OP_EXPECT(of_conv1d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 3), VALS(-1, -1, -1), 0);
  /* Dilation 2: y[i] = x[i] - x[i + 2]. */
  of_conv1d_options_init(&o);
  o.dilation = 2;
  OP_EXPECT(of_conv1d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 3), VALS(-2, -2, -2), 0);
  /* Groups 2: each channel scaled by its own 1-tap kernel. */
  of_tensor_t* x2 = make_tensor(s, F64, DIMS(1, 2, 2), VALS(1, 2, 3, 4));
  of_tensor_t* w2 = make_tensor(s, F64, DIMS(2, 1, 1), VALS(10, 100));
  of_conv1d_options_init(&o);
  o.groups = 2;
  OP_EXPECT(of_conv1d(s, x2, w2, NULL, &o, &r), F64, DIMS(1, 2, 2), VALS(10, 20, 300, 400), 0);

  of_tensor_t* x2f = make_tensor(s, F32, DIMS(1, 2, 2), VALS(1, 2, 3, 4));
  OP_FAILS(of_conv1d(s, x2f, w, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv1d", "conv1d", "2 channels");
  of_tensor_release(x2f);
  of_tensor_t* flat = make_tensor(s, F32, DIMS(1, 5), VALS(1, 2, 3, 4, 5));
  OP_FAILS(of_conv1d(s, flat, w, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv1d", "conv1d", "x must be 3-D");
  of_conv1d_options_init(&o);
  o.stride = 0;
  OP_FAILS(of_conv1d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv1d", "stride");
  of_conv1d_options_init(&o);
  o.struct_size = 0;
  OP_FAILS(of_conv1d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv1d", "struct_size");
  OP_FAILS(of_conv1d(s, NULL, w, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv1d", "x");
  ASSERT_STATUS(of_conv1d(s, x, w, NULL, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");

  of_tensor_release(flat);
  of_tensor_release(x2);
  of_tensor_release(w2);
  of_tensor_release(bias);
  of_tensor_release(w);
  of_tensor_release(x);
}

static void test_conv_transpose1d(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 2), VALS(1, 2));
  of_tensor_t* w = make_tensor(s, F32, DIMS(1, 1, 3), VALS(1, 1, 1));
  of_conv_transpose1d_options_t o;
  of_conv_transpose1d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_true(o.stride == 1 && o.padding == 0 && o.output_padding == 0 && o.dilation == 1 && o.groups == 1);
  OP_EXPECT(of_conv_transpose1d(s, x, w, NULL, NULL, &r), F32, DIMS(1, 1, 4), VALS(1, 3, 3, 2), 0);
  /* Stride 2: x[0] fills 0..2 and x[1] fills 2..4; output_padding 1 adds a position no tap reaches. */
  o.stride = 2;
  OP_EXPECT(of_conv_transpose1d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 5), VALS(1, 1, 3, 2, 2), 0);
  o.output_padding = 1;
  OP_EXPECT(of_conv_transpose1d(s, x, w, NULL, &o, &r), F32, DIMS(1, 1, 6), VALS(1, 1, 3, 2, 2, 0), 0);

  o.output_padding = 2;
  OP_FAILS(of_conv_transpose1d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose1d",
           "output_padding", "smaller than stride");
  of_conv_transpose1d_options_init(&o);
  o.struct_size = 0;
  OP_FAILS(of_conv_transpose1d(s, x, w, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose1d", "struct_size");
  of_tensor_t* flat = make_tensor(s, F32, DIMS(1, 3), VALS(1, 1, 1));
  OP_FAILS(of_conv_transpose1d(s, x, flat, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv_transpose1d",
           "weight must be 3-D");
  of_tensor_release(flat);
  ASSERT_STATUS(of_conv_transpose1d(s, x, w, NULL, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  of_tensor_release(w);
  of_tensor_release(x);
}

static void test_conv3d(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  of_tensor_t* ones = make_tensor(s, F32, DIMS(1, 1, 2, 2, 2), VALS(1, 1, 1, 1, 1, 1, 1, 1));
  of_tensor_t* bias = make_tensor(s, F32, DIMS(1), VALS(0.5));
  /* One window over the whole input: the sum plus the bias. */
  OP_EXPECT(of_conv3d(s, x, ones, NULL, NULL, &r), F32, DIMS(1, 1, 1, 1, 1), VALS(36), 0);
  OP_EXPECT(of_conv3d(s, x, ones, bias, NULL, &r), F32, DIMS(1, 1, 1, 1, 1), VALS(36.5), 0);

  of_conv3d_options_t o;
  of_conv3d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  for (int a = 0; a < 3; ++a) assert_true(o.stride[a] == 1 && o.padding[a] == 0 && o.dilation[a] == 1);
  assert_true(o.groups == 1);
  /* A (2, 1, 1) kernel (1, -1) differences the two depth planes; depth padding 1 adds a plane of zeros
   * on each side, so the first output plane is -x[0] and the last x[1]. */
  of_tensor_t* xd = make_tensor(s, F64, DIMS(1, 1, 2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  of_tensor_t* diff = make_tensor(s, F64, DIMS(1, 1, 2, 1, 1), VALS(1, -1));
  OP_EXPECT(of_conv3d(s, xd, diff, NULL, &o, &r), F64, DIMS(1, 1, 1, 2, 2), VALS(-4, -4, -4, -4), 0);
  o.padding[0] = 1;
  OP_EXPECT(of_conv3d(s, xd, diff, NULL, &o, &r), F64, DIMS(1, 1, 3, 2, 2),
            VALS(-1, -2, -3, -4, -4, -4, -4, -4, 5, 6, 7, 8), 0);
  /* Stride 2 in H and W with a (1, 1, 1) kernel of 2 picks x[:, :, :, 0, 0] doubled. */
  of_conv3d_options_init(&o);
  o.stride[1] = o.stride[2] = 2;
  of_tensor_t* two = make_tensor(s, F64, DIMS(1, 1, 1, 1, 1), VALS(2));
  OP_EXPECT(of_conv3d(s, xd, two, NULL, &o, &r), F64, DIMS(1, 1, 2, 1, 1), VALS(2, 10), 0);
  /* Dilation 2 in depth: taps at depth 0 and 2. */
  of_tensor_t* x3 = make_tensor(s, F64, DIMS(1, 1, 3, 1, 1), VALS(1, 2, 3));
  of_tensor_t* pair = make_tensor(s, F64, DIMS(1, 1, 2, 1, 1), VALS(1, 1));
  of_conv3d_options_init(&o);
  o.dilation[0] = 2;
  OP_EXPECT(of_conv3d(s, x3, pair, NULL, &o, &r), F64, DIMS(1, 1, 1, 1, 1), VALS(4), 0);
  /* Groups 2: each channel scaled by its own 1x1x1 kernel. */
  of_tensor_t* x2 = make_tensor(s, F64, DIMS(1, 2, 1, 1, 1), VALS(1, 2));
  of_tensor_t* w2 = make_tensor(s, F64, DIMS(2, 1, 1, 1, 1), VALS(3, 4));
  of_conv3d_options_init(&o);
  o.groups = 2;
  OP_EXPECT(of_conv3d(s, x2, w2, NULL, &o, &r), F64, DIMS(1, 2, 1, 1, 1), VALS(3, 8), 0);

  /* Errors: rank, channels, bad attributes, an options struct that was not initialised, NULLs, dtype. */
  of_tensor_t* x4 = make_tensor(s, F32, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  OP_FAILS(of_conv3d(s, x4, ones, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "conv3d", "x must be 5-D");
  OP_FAILS(of_conv3d(s, x2, two, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "conv3d", "2 channels",
           "weight.shape[1] * groups = 1 * 1 = 1");
  of_conv3d_options_init(&o);
  o.stride[2] = 0;
  OP_FAILS(of_conv3d(s, x, ones, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "stride", "[1, 1, 0]");
  of_conv3d_options_init(&o);
  o.padding[0] = -1;
  OP_FAILS(of_conv3d(s, x, ones, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "padding");
  of_conv3d_options_init(&o);
  o.struct_size = 0;
  OP_FAILS(of_conv3d(s, x, ones, NULL, &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "struct_size");
  OP_FAILS(of_conv3d(s, x, NULL, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "weight");
  OP_FAILS(of_conv3d(s, NULL, ones, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "x");
  OP_FAILS(of_conv3d(NULL, x, ones, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_conv3d", "session");
  ASSERT_STATUS(of_conv3d(s, x, ones, NULL, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  of_tensor_t* xi = make_tensor(s, I64, DIMS(1, 1, 1, 1, 1), VALS(1));
  OP_FAILS(of_conv3d(s, xi, xi, NULL, NULL, &r), OF_STATUS_UNIMPLEMENTED, "of_conv3d", "conv3d", "int64");

  of_tensor_release(xi);
  of_tensor_release(x4);
  of_tensor_release(w2);
  of_tensor_release(x2);
  of_tensor_release(pair);
  of_tensor_release(x3);
  of_tensor_release(two);
  of_tensor_release(diff);
  of_tensor_release(xd);
  of_tensor_release(bias);
  of_tensor_release(ones);
  of_tensor_release(x);
}

/* Gradients through the C ABI: with a 2x2x2 kernel of ones and padding 1, each x element of a 2x2x2
 * input reaches all 8 windows that cover it, and the bias all 27 outputs. */
static void test_conv3d_gradient(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(1, 1, 2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  of_tensor_t* w = make_tensor(s, F64, DIMS(1, 1, 2, 2, 2), VALS(1, 1, 1, 1, 1, 1, 1, 1));
  of_tensor_t* b = make_tensor(s, F64, DIMS(1), VALS(0));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  ASSERT_OK(of_tensor_set_requires_grad(b, 1));
  of_conv3d_options_t o;
  of_conv3d_options_init(&o);
  o.padding[0] = o.padding[1] = o.padding[2] = 1;
  of_tensor_t* y = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_conv3d(s, x, w, b, &o, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F64, DIMS(1, 1, 2, 2, 2), VALS(8, 8, 8, 8, 8, 8, 8, 8), 1e-12);
  of_tensor_release(g);
  /* Each tap sees every x element once (padding 1 with a 2-wide kernel): the sum 36. */
  ASSERT_OK(of_tensor_grad(w, &g));
  EXPECT_TENSOR(g, F64, DIMS(1, 1, 2, 2, 2), VALS(36, 36, 36, 36, 36, 36, 36, 36), 1e-12);
  of_tensor_release(g);
  ASSERT_OK(of_tensor_grad(b, &g));
  EXPECT_TENSOR(g, F64, DIMS(1), VALS(27), 1e-12);
  of_tensor_release(g);
  of_tensor_release(loss);
  of_tensor_release(y);
  of_tensor_release(b);
  of_tensor_release(w);
  of_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_conv_transpose2d, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_conv_transpose2d_gradient, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_conv1d, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_conv_transpose1d, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_conv3d, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_conv3d_gradient, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
