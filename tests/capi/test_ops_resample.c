/* CMocka tests of the resampling ops of the C ABI (of_pad, of_interpolate, of_pixel_shuffle,
 * of_pixel_unshuffle) on small inputs worked out by hand, and their error statuses. */
#include "capi_op_util.h"

static of_pad_options_t pad_mode(of_pad_mode_t mode, double value) {
  of_pad_options_t o;
  of_pad_options_init(&o);
  o.mode = mode;
  o.value = value;
  return o;
}

static void test_pad(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 3), VALS(1, 2, 3));
  OP_EXPECT(of_pad(s, x, DIMS(2, 1), NULL, &r), F32, DIMS(1, 6), VALS(0, 0, 1, 2, 3, 0), 0);
  of_pad_options_t o = pad_mode(OF_PAD_CONSTANT, -1);
  OP_EXPECT(of_pad(s, x, DIMS(0, 0, 1, 0), &o, &r), F32, DIMS(2, 3), VALS(-1, -1, -1, 1, 2, 3), 0);
  OP_EXPECT(of_pad(s, x, DIMS(-1, 1), &o, &r), F32, DIMS(1, 3), VALS(2, 3, -1), 0);
  o = pad_mode(OF_PAD_REFLECT, 0);
  OP_EXPECT(of_pad(s, x, DIMS(2, 2), &o, &r), F32, DIMS(1, 7), VALS(3, 2, 1, 2, 3, 2, 1), 0);
  o = pad_mode(OF_PAD_REPLICATE, 0);
  OP_EXPECT(of_pad(s, x, DIMS(2, 2), &o, &r), F32, DIMS(1, 7), VALS(1, 1, 1, 2, 3, 3, 3), 0);
  o = pad_mode(OF_PAD_CIRCULAR, 0);
  OP_EXPECT(of_pad(s, x, DIMS(2, 2), &o, &r), F32, DIMS(1, 7), VALS(2, 3, 1, 2, 3, 1, 2), 0);
  OP_EXPECT(of_pad(s, x, NULL, 0, &o, &r), F32, DIMS(1, 3), VALS(1, 2, 3), 0);
  of_tensor_t* ints = make_tensor(s, I64, DIMS(2), VALS(7, 8));
  o = pad_mode(OF_PAD_CONSTANT, 5);
  OP_EXPECT(of_pad(s, ints, DIMS(1, 0), &o, &r), I64, DIMS(3), VALS(5, 7, 8), 0);

  OP_FAILS(of_pad(NULL, x, DIMS(1, 1), NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_pad", "session");
  OP_FAILS(of_pad(s, NULL, DIMS(1, 1), NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_pad", "x");
  OP_FAILS(of_pad(s, x, NULL, 2, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_pad", "pads");
  OP_FAILS(of_pad(s, x, DIMS(1, 1, 1), NULL, &r), OF_STATUS_INVALID_ARGUMENT, "pad: ", "even number");
  o = pad_mode(OF_PAD_REFLECT, 0);
  OP_FAILS(of_pad(s, x, DIMS(3, 0), &o, &r), OF_STATUS_INVALID_ARGUMENT, "pad: ", "needs each pad < 3");
  o = pad_mode(OF_PAD_REFLECT, 1);
  OP_FAILS(of_pad(s, x, DIMS(1, 0), &o, &r), OF_STATUS_INVALID_ARGUMENT, "pad: ", "takes no value");
  o = pad_mode(7, 0);
  OP_FAILS(of_pad(s, x, DIMS(1, 0), &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_pad", "options->mode is 7");
  o.struct_size = 0;
  OP_FAILS(of_pad(s, x, DIMS(1, 0), &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_pad", "struct_size");
  ASSERT_STATUS(of_pad(s, x, DIMS(1, 1), NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  of_tensor_release(ints);
  of_tensor_release(x);
}

/* d/dx of sum(reflect pad): each cell counts the times it was copied. */
static void test_pad_gradient(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(3), VALS(1, 2, 3));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_pad_options_t o = pad_mode(OF_PAD_REFLECT, 0);
  of_tensor_t* y = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_pad(s, x, DIMS(2, 1), &o, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F64, DIMS(3), VALS(1, 3, 2), 1e-12);
  of_tensor_release(g);
  of_tensor_release(loss);
  of_tensor_release(y);
  of_tensor_release(x);
}

static void test_interpolate(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(1, 1, 4), VALS(0, 1, 2, 3));
  OP_EXPECT(of_interpolate(s, x, DIMS(8), NULL, &r), F32, DIMS(1, 1, 8), VALS(0, 0, 1, 1, 2, 2, 3, 3), 0);
  of_interpolate_options_t o;
  of_interpolate_options_init(&o);
  o.mode = OF_INTERPOLATE_NEAREST_EXACT;
  OP_EXPECT(of_interpolate(s, x, DIMS(3), &o, &r), F32, DIMS(1, 1, 3), VALS(0, 2, 3), 0);
  o.mode = OF_INTERPOLATE_LINEAR;
  OP_EXPECT(of_interpolate(s, x, DIMS(8), &o, &r), F32, DIMS(1, 1, 8), VALS(0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3),
            1e-6);
  o.align_corners = 1;
  OP_EXPECT(of_interpolate(s, x, DIMS(7), &o, &r), F32, DIMS(1, 1, 7), VALS(0, 0.5, 1, 1.5, 2, 2.5, 3), 1e-6);
  /* Bicubic: exact on the ramp's interior; the clamped edge bends it (weights -3/32, 19/32, 19/32, -3/32). */
  o.mode = OF_INTERPOLATE_BICUBIC;
  OP_EXPECT(of_interpolate(s, x, DIMS(7), &o, &r), F32, DIMS(1, 1, 7), VALS(0, 0.40625, 1, 1.5, 2, 2.59375, 3), 1e-6);
  o.mode = OF_INTERPOLATE_LINEAR;
  /* Bilinear, the size from scale_factor 2: (1, 1, 2, 2) -> (1, 1, 4, 4). */
  of_tensor_t* img = make_tensor(s, F64, DIMS(1, 1, 2, 2), VALS(0, 4, 8, 12));
  o.align_corners = 0;
  o.scale_factor[0] = o.scale_factor[1] = 2;
  OP_EXPECT(of_interpolate(s, img, DIMS(0, 0), &o, &r), F64, DIMS(1, 1, 4, 4),
            VALS(0, 1, 3, 4, 2, 3, 5, 6, 6, 7, 9, 10, 8, 9, 11, 12), 1e-12);

  OP_FAILS(of_interpolate(NULL, x, DIMS(3), NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_interpolate", "session");
  OP_FAILS(of_interpolate(s, NULL, DIMS(3), NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_interpolate", "x");
  OP_FAILS(of_interpolate(s, x, NULL, 1, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "of_interpolate", "size");
  OP_FAILS(of_interpolate(s, x, DIMS(3, 3), NULL, &r), OF_STATUS_INVALID_ARGUMENT, "interpolate: ", "1 spatial dims");
  of_interpolate_options_init(&o);
  o.align_corners = 1;
  OP_FAILS(of_interpolate(s, x, DIMS(3), &o, &r), OF_STATUS_INVALID_ARGUMENT, "interpolate: ", "align_corners");
  o.align_corners = 2;
  OP_FAILS(of_interpolate(s, x, DIMS(3), &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_interpolate", "options->align_corners");
  of_interpolate_options_init(&o);
  o.mode = 9;
  OP_FAILS(of_interpolate(s, x, DIMS(3), &o, &r), OF_STATUS_INVALID_ARGUMENT, "of_interpolate", "options->mode is 9");
  of_tensor_t* ints = make_tensor(s, I64, DIMS(1, 1, 2), VALS(1, 2));
  OP_FAILS(of_interpolate(s, ints, DIMS(3), NULL, &r), OF_STATUS_INVALID_ARGUMENT, "interpolate: ", "floating point");
  ASSERT_STATUS(of_interpolate(s, x, DIMS(3), NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  of_tensor_release(ints);
  of_tensor_release(img);
  of_tensor_release(x);
}

/* d/dx of sum(linear interpolation, align_corners) from 3 to 5: the weights' column sums. */
static void test_interpolate_gradient(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(1, 1, 3), VALS(1, 2, 3));
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  of_interpolate_options_t o;
  of_interpolate_options_init(&o);
  o.mode = OF_INTERPOLATE_LINEAR;
  o.align_corners = 1;
  of_tensor_t* y = NULL;
  of_tensor_t* loss = NULL;
  ASSERT_OK(of_interpolate(s, x, DIMS(5), &o, &y));
  ASSERT_OK(of_sum(s, y, NULL, 0, 0, &loss));
  ASSERT_OK(of_tensor_backward(s, loss, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F64, DIMS(1, 1, 3), VALS(1.5, 2, 1.5), 1e-12);
  of_tensor_release(g);
  of_tensor_release(loss);
  of_tensor_release(y);
  of_tensor_release(x);
}

static void test_pixel_shuffle(void** state) {
  of_session_t* s = *state;
  /* Four 1x1 channels become one 2x2 channel, row-major: channel i * 2 + j goes to (i, j). */
  of_tensor_t* x = make_tensor(s, I32, DIMS(1, 4, 1, 1), VALS(1, 2, 3, 4));
  of_tensor_t* y = NULL;
  ASSERT_OK(of_pixel_shuffle(s, x, 2, &y));
  EXPECT_TENSOR(y, I32, DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4), 0);
  OP_EXPECT(of_pixel_unshuffle(s, y, 2, &r), I32, DIMS(1, 4, 1, 1), VALS(1, 2, 3, 4), 0);
  of_tensor_t* wide = make_tensor(s, F32, DIMS(1, 1, 2, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  OP_EXPECT(of_pixel_unshuffle(s, wide, 2, &r), F32, DIMS(1, 4, 1, 2), VALS(1, 3, 2, 4, 5, 7, 6, 8), 0);

  OP_FAILS(of_pixel_shuffle(NULL, x, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_pixel_shuffle", "session");
  OP_FAILS(of_pixel_shuffle(s, NULL, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_pixel_shuffle", "x");
  OP_FAILS(of_pixel_shuffle(s, x, 3, &r), OF_STATUS_INVALID_ARGUMENT, "pixel_shuffle: ", "not divisible");
  OP_FAILS(of_pixel_shuffle(s, x, 0, &r), OF_STATUS_INVALID_ARGUMENT, "pixel_shuffle: ", "upscale_factor is 0");
  OP_FAILS(of_pixel_unshuffle(s, wide, 3, &r), OF_STATUS_INVALID_ARGUMENT, "pixel_unshuffle: ", "not divisible");
  OP_FAILS(of_pixel_unshuffle(s, NULL, 2, &r), OF_STATUS_INVALID_ARGUMENT, "of_pixel_unshuffle", "x");
  ASSERT_STATUS(of_pixel_unshuffle(s, wide, 2, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  of_tensor_release(wide);
  of_tensor_release(y);
  of_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pad, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_pad_gradient, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_interpolate, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_interpolate_gradient, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_pixel_shuffle, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
