/* CMocka tests of the losses and recurrent cells of the C ABI: each function on small inputs worked
 * out by hand, and the error paths. */
#include "capi_op_util.h"

static of_loss_options_t reduction(of_reduction_t r) {
  of_loss_options_t o;
  of_loss_options_init(&o);
  o.reduction = r;
  return o;
}

static void test_elementwise_losses(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(3), VALS(1, 2, 3));
  of_tensor_t* t = make_tensor(s, F32, DIMS(3), VALS(1.5, 2, 1));
  const of_loss_options_t none = reduction(OF_REDUCTION_NONE), sum = reduction(OF_REDUCTION_SUM);
  OP_EXPECT(of_mse_loss(s, x, t, &none, &r), F32, DIMS(3), VALS(0.25, 0, 4), 1e-6);
  OP_EXPECT(of_mse_loss(s, x, t, NULL, &r), F32, DIMS0, VALS(4.25 / 3), 1e-6);
  OP_EXPECT(of_l1_loss(s, x, t, &sum, &r), F32, DIMS0, VALS(2.5), 1e-6);
  OP_EXPECT(of_smooth_l1_loss(s, x, t, 1.0, &none, &r), F32, DIMS(3), VALS(0.125, 0, 1.5), 1e-6);
  OP_EXPECT(of_smooth_l1_loss(s, x, t, 0.0, &none, &r), F32, DIMS(3), VALS(0.5, 0, 2), 1e-6);

  of_tensor_t* logits = make_tensor(s, F64, DIMS(2), VALS(0, 1));
  of_tensor_t* labels = make_tensor(s, F64, DIMS(2), VALS(1, 0));
  of_tensor_t* pw = make_tensor(s, F64, DIMS(2), VALS(2, 2));
  of_tensor_t* w = make_tensor(s, F64, DIMS(2), VALS(3, 1));
  OP_EXPECT(of_binary_cross_entropy_with_logits(s, logits, labels, NULL, NULL, &none, &r), F64, DIMS(2),
            VALS(log(2.0), log(1 + exp(1.0))), 1e-12);
  OP_EXPECT(of_binary_cross_entropy_with_logits(s, logits, labels, w, pw, &none, &r), F64, DIMS(2),
            VALS(3 * 2 * log(2.0), log(1 + exp(1.0))), 1e-12);

  of_tensor_t* lp = make_tensor(s, F64, DIMS(2), VALS(log(0.5), log(0.5)));
  of_tensor_t* p = make_tensor(s, F64, DIMS(2), VALS(0.25, 0.75));
  of_tensor_t* logp = make_tensor(s, F64, DIMS(2), VALS(log(0.25), log(0.75)));
  OP_EXPECT(of_kl_div(s, lp, p, 0, &none, &r), F64, DIMS(2), VALS(0.25 * log(0.5), 0.75 * log(1.5)), 1e-12);
  OP_EXPECT(of_kl_div(s, lp, logp, 1, &sum, &r), F64, DIMS0, VALS(0.25 * log(0.5) + 0.75 * log(1.5)), 1e-12);

  /* Errors. */
  of_loss_options_t bad = reduction(7);
  OP_FAILS(of_mse_loss(s, x, t, &bad, &r), OF_STATUS_INVALID_ARGUMENT, "reduction", "7");
  of_loss_options_t smooth = reduction(OF_REDUCTION_MEAN);
  smooth.label_smoothing = 0.1;
  OP_FAILS(of_l1_loss(s, x, t, &smooth, &r), OF_STATUS_INVALID_ARGUMENT, "label_smoothing");
  OP_FAILS(of_kl_div(s, lp, p, 2, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "log_target");
  OP_FAILS(of_mse_loss(s, x, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "target");
  OP_FAILS(of_mse_loss(NULL, x, t, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "session");
  OP_FAILS(of_mse_loss(s, x, lp, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "mse_loss", "target", "dtype");
  OP_FAILS(of_smooth_l1_loss(s, x, t, -1, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "beta");
  OP_FAILS(of_binary_cross_entropy_with_logits(s, logits, labels, x, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT,
           "weight");
  ASSERT_STATUS(of_l1_loss(s, x, t, NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");

  of_tensor_release(x);
  of_tensor_release(t);
  of_tensor_release(logits);
  of_tensor_release(labels);
  of_tensor_release(pw);
  of_tensor_release(w);
  of_tensor_release(lp);
  of_tensor_release(p);
  of_tensor_release(logp);
}

static void test_weighted_class_losses(void** state) {
  of_session_t* s = *state;
  const double l3 = log(3.0);
  of_tensor_t* logits = make_tensor(s, F64, DIMS(2, 3), VALS(0, 0, 0, 0, 0, 0));
  of_tensor_t* target = make_tensor(s, I64, DIMS(2), VALS(0, 2));
  of_tensor_t* w = make_tensor(s, F64, DIMS(3), VALS(2, 1, 0.5));
  const of_loss_options_t none = reduction(OF_REDUCTION_NONE), sum = reduction(OF_REDUCTION_SUM);
  OP_EXPECT(of_weighted_cross_entropy(s, logits, target, w, NULL, &r), F64, DIMS0, VALS(l3), 1e-12);
  OP_EXPECT(of_weighted_cross_entropy(s, logits, target, w, &none, &r), F64, DIMS(2), VALS(2 * l3, 0.5 * l3), 1e-12);
  OP_EXPECT(of_weighted_cross_entropy(s, logits, target, NULL, &sum, &r), F64, DIMS0, VALS(2 * l3), 1e-12);
  of_tensor_t* lp = make_tensor(s, F64, DIMS(2, 3), VALS(-1, -2, -3, -4, -5, -6));
  OP_EXPECT(of_weighted_nll_loss(s, lp, target, w, NULL, &r), F64, DIMS0, VALS(2), 1e-12);
  /* N-d: logits (1, 2, 2) (classes along dim 1), target (1, 2). */
  of_tensor_t* nd = make_tensor(s, F64, DIMS(1, 2, 2), VALS(0, 0, 0, log(3.0)));
  of_tensor_t* nd_target = make_tensor(s, I64, DIMS(1, 2), VALS(0, 1));
  OP_EXPECT(of_cross_entropy(s, nd, nd_target, &none, &r), F64, DIMS(1, 2), VALS(log(2.0), log(4.0 / 3)), 1e-12);
  OP_EXPECT(of_weighted_cross_entropy(s, nd, nd_target, NULL, &none, &r), F64, DIMS(1, 2),
            VALS(log(2.0), log(4.0 / 3)), 1e-12);
  /* Errors: a weight per class, of the input's dtype; nll_loss takes no label smoothing. */
  of_tensor_t* w2 = make_tensor(s, F64, DIMS(2), VALS(1, 1));
  OP_FAILS(of_weighted_cross_entropy(s, logits, target, w2, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "cross_entropy",
           "weight");
  of_loss_options_t smooth = reduction(OF_REDUCTION_MEAN);
  smooth.label_smoothing = 0.1;
  OP_FAILS(of_weighted_nll_loss(s, lp, target, w, &smooth, &r), OF_STATUS_INVALID_ARGUMENT, "label_smoothing");
  OP_FAILS(of_weighted_nll_loss(s, lp, NULL, w, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "target");
  of_tensor_release(logits);
  of_tensor_release(target);
  of_tensor_release(w);
  of_tensor_release(lp);
  of_tensor_release(nd);
  of_tensor_release(nd_target);
  of_tensor_release(w2);
}

static void test_recurrent_cells(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F64, DIMS(1, 1), VALS(0));
  of_tensor_t* h = make_tensor(s, F64, DIMS(1, 1), VALS(1));
  of_tensor_t* c = make_tensor(s, F64, DIMS(1, 1), VALS(1));
  of_tensor_t* w4 = make_tensor(s, F64, DIMS(4, 1), VALS(0, 0, 0, 0));
  of_tensor_t* b4 = make_tensor(s, F64, DIMS(4), VALS(0, 0, 1, 0));
  of_tensor_t* w3 = make_tensor(s, F64, DIMS(3, 1), VALS(0, 0, 0));
  of_tensor_t* b3 = make_tensor(s, F64, DIMS(3), VALS(0, 0, 2));
  /* Gates 0 (g = 1 with the bias): i = f = o = 1/2, c' = c / 2 + tanh(g) / 2, h' = tanh(c') / 2. */
  of_tensor_t* hn = NULL;
  of_tensor_t* cn = NULL;
  ASSERT_OK(of_lstm_cell(s, x, h, c, w4, w4, NULL, NULL, &hn, &cn));
  EXPECT_TENSOR(hn, F64, DIMS(1, 1), VALS(0.5 * tanh(0.5)), 1e-12);
  EXPECT_TENSOR(cn, F64, DIMS(1, 1), VALS(0.5), 1e-12);
  of_tensor_release(hn);
  of_tensor_release(cn);
  ASSERT_OK(of_lstm_cell(s, x, h, c, w4, w4, b4, NULL, &hn, &cn));
  const double c1 = 0.5 + 0.5 * tanh(1.0);
  EXPECT_TENSOR(hn, F64, DIMS(1, 1), VALS(0.5 * tanh(c1)), 1e-12);
  EXPECT_TENSOR(cn, F64, DIMS(1, 1), VALS(c1), 1e-12);
  of_tensor_release(hn);
  of_tensor_release(cn);
  /* GRU: r = z = 1/2, n = tanh(0 + r h_n), h' = n / 2 + h / 2. */
  OP_EXPECT(of_gru_cell(s, x, h, w3, w3, NULL, NULL, &r), F64, DIMS(1, 1), VALS(0.5), 1e-12);
  OP_EXPECT(of_gru_cell(s, x, h, w3, w3, NULL, b3, &r), F64, DIMS(1, 1), VALS(0.5 * tanh(1.0) + 0.5), 1e-12);
  /* Errors: both outputs are required; shapes are checked; nothing is written on failure. */
  hn = OUT_SENTINEL;
  ASSERT_STATUS(of_lstm_cell(s, x, h, c, w4, w4, NULL, NULL, &hn, NULL), OF_STATUS_INVALID_ARGUMENT, "out_c");
  assert_ptr_equal(hn, OUT_SENTINEL);
  cn = OUT_SENTINEL;
  ASSERT_STATUS(of_lstm_cell(s, x, h, c, w3, w4, NULL, NULL, &hn, &cn), OF_STATUS_INVALID_ARGUMENT, "lstm_cell",
                "w_ih");
  assert_ptr_equal(hn, OUT_SENTINEL);
  assert_ptr_equal(cn, OUT_SENTINEL);
  OP_FAILS(of_gru_cell(s, x, h, w4, w3, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "gru_cell", "w_ih");
  OP_FAILS(of_gru_cell(s, x, NULL, w3, w3, NULL, NULL, &r), OF_STATUS_INVALID_ARGUMENT, "'h'");
  of_tensor_release(x);
  of_tensor_release(h);
  of_tensor_release(c);
  of_tensor_release(w4);
  of_tensor_release(b4);
  of_tensor_release(w3);
  of_tensor_release(b3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_elementwise_losses, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_weighted_class_losses, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_recurrent_cells, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
