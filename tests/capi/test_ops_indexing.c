/* CMocka tests of the indexing ops of the C ABI: every function on small inputs whose results are
 * worked out by hand here, gradients through of_tensor_backward, and the error paths. */
#include "capi_op_util.h"

#define INVALID OF_STATUS_INVALID_ARGUMENT

/* The gradient of sum(y) w.r.t. the leaf `x`, checked against the expectation, after y = call; then
 * x's gradient is cleared. */
#define GRAD_EXPECT(x, call, ...)                     \
  do {                                                \
    of_tensor_t* r = NULL;                            \
    ASSERT_OK(call);                                  \
    of_tensor_t* total = NULL;                        \
    ASSERT_OK(of_sum(s, r, NULL, 0, 0, &total));      \
    ASSERT_OK(of_tensor_backward(s, total, NULL, 0)); \
    of_tensor_t* g = NULL;                            \
    ASSERT_OK(of_tensor_grad((x), &g));               \
    EXPECT_TENSOR(g, __VA_ARGS__);                    \
    of_tensor_release(g);                             \
    ASSERT_OK(of_tensor_set_grad((x), NULL));         \
    of_tensor_release(total);                         \
    of_tensor_release(r);                             \
  } while (0)

static void test_embedding(void** state) {
  of_session_t* s = *state;
  of_tensor_t* w = make_tensor(s, F32, DIMS(3, 2), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* idx = make_tensor(s, I64, DIMS(2, 2), VALS(2, 0, 2, 1));
  OP_EXPECT(of_embedding(s, w, idx, -1, &r), F32, DIMS(2, 2, 2), VALS(5, 6, 1, 2, 5, 6, 3, 4), 0);

  /* Row 2 appears twice; as padding_idx it gets no gradient. */
  ASSERT_OK(of_tensor_set_requires_grad(w, 1));
  GRAD_EXPECT(w, of_embedding(s, w, idx, 2, &r), F32, DIMS(3, 2), VALS(1, 1, 1, 1, 0, 0), 0);

  of_tensor_t* bad = make_tensor(s, I64, DIMS(2), VALS(1, 3));
  OP_FAILS(of_embedding(s, w, bad, -1, &r), INVALID, "of_embedding", "indices[1] is 3", "[0, 3)");
  OP_FAILS(of_embedding(s, w, idx, 3, &r), INVALID, "of_embedding", "padding_idx 3");
  OP_FAILS(of_embedding(s, w, NULL, -1, &r), INVALID, "of_embedding", "indices");
  OP_FAILS(of_embedding(NULL, w, idx, -1, &r), INVALID, "of_embedding", "session");
  ASSERT_STATUS(of_embedding(s, w, idx, -1, NULL), INVALID, "of_embedding", "out_tensor");
  of_tensor_release(bad);
  of_tensor_release(idx);
  of_tensor_release(w);
}

static void test_gather_scatter(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  of_tensor_t* idx = make_tensor(s, I64, DIMS(2, 2), VALS(2, 0, 1, 1));
  of_tensor_t* src = make_tensor(s, F32, DIMS(2, 2), VALS(10, 20, 30, 40));
  OP_EXPECT(of_gather(s, x, 1, idx, &r), F32, DIMS(2, 2), VALS(3, 1, 5, 5), 0);
  OP_EXPECT(of_gather(s, x, -1, idx, &r), F32, DIMS(2, 2), VALS(3, 1, 5, 5), 0);
  /* Row 1 writes position 1 twice: the last write wins; scatter_add sums. */
  OP_EXPECT(of_scatter(s, x, 1, idx, src, &r), F32, DIMS(2, 3), VALS(20, 2, 10, 4, 40, 6), 0);
  OP_EXPECT(of_scatter_add(s, x, 1, idx, src, &r), F32, DIMS(2, 3), VALS(21, 2, 13, 4, 75, 6), 0);
  of_tensor_t* sel = make_tensor(s, I64, DIMS(3), VALS(1, 1, 0));
  OP_EXPECT(of_index_select(s, x, 0, sel, &r), F32, DIMS(3, 3), VALS(4, 5, 6, 4, 5, 6, 1, 2, 3), 0);
  OP_EXPECT(of_index_select(s, x, 1, sel, &r), F32, DIMS(2, 3), VALS(2, 2, 1, 5, 5, 4), 0);

  /* Gradients: gather sums into repeated positions; scatter masks the written ones. */
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  GRAD_EXPECT(x, of_gather(s, x, 1, idx, &r), F32, DIMS(2, 3), VALS(1, 0, 1, 0, 2, 0), 0);
  GRAD_EXPECT(x, of_scatter(s, x, 1, idx, src, &r), F32, DIMS(2, 3), VALS(0, 1, 0, 1, 0, 1), 0);
  GRAD_EXPECT(x, of_index_select(s, x, 0, sel, &r), F32, DIMS(2, 3), VALS(1, 1, 1, 2, 2, 2), 0);

  of_tensor_t* bad = make_tensor(s, I64, DIMS(2, 2), VALS(0, 3, 1, 1));
  OP_FAILS(of_gather(s, x, 1, bad, &r), INVALID, "of_gather", "index[0, 1] is 3", "[0, 3)");
  OP_FAILS(of_scatter(s, x, 1, bad, src, &r), INVALID, "of_scatter", "index[0, 1] is 3");
  OP_FAILS(of_scatter_add(s, x, 1, bad, src, &r), INVALID, "of_scatter_add", "index[0, 1] is 3");
  OP_FAILS(of_index_select(s, x, 0, sel, NULL), INVALID, "of_index_select", "out_tensor");
  OP_FAILS(of_index_select(s, x, 1, x, &r), INVALID, "of_index_select", "index must be int64");
  OP_FAILS(of_scatter(s, x, 1, idx, NULL, &r), INVALID, "of_scatter", "src");
  OP_FAILS(of_gather(s, x, 2, idx, &r), INVALID, "of_gather", "dim");
  of_tensor_release(bad);
  of_tensor_release(sel);
  of_tensor_release(src);
  of_tensor_release(idx);
  of_tensor_release(x);
}

static void test_masked_fill_one_hot(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 2), VALS(1, 2, 3, 4));
  of_tensor_t* mask = make_tensor(s, BOOL, DIMS(2), VALS(0, 1));
  OP_EXPECT(of_masked_fill(s, x, mask, -INFINITY, &r), F32, DIMS(2, 2), VALS(1, -INFINITY, 3, -INFINITY), 0);
  of_tensor_t* i8 = make_tensor(s, of_dtype_int8(), DIMS(2), VALS(1, 2));
  OP_EXPECT(of_masked_fill(s, i8, mask, -7, &r), of_dtype_int8(), DIMS(2), VALS(1, -7), 0);
  OP_FAILS(of_masked_fill(s, i8, mask, 300, &r), INVALID, "of_masked_fill", "value", "int8");
  OP_FAILS(of_masked_fill(s, x, x, 0, &r), INVALID, "of_masked_fill", "mask must be bool");
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  GRAD_EXPECT(x, of_masked_fill(s, x, mask, 0, &r), F32, DIMS(2, 2), VALS(1, 0, 1, 0), 0);

  of_tensor_t* idx = make_tensor(s, I64, DIMS(3), VALS(2, 0, 2));
  OP_EXPECT(of_one_hot(s, idx, 3, &r), I64, DIMS(3, 3), VALS(0, 0, 1, 1, 0, 0, 0, 0, 1), 0);
  OP_FAILS(of_one_hot(s, idx, 2, &r), INVALID, "of_one_hot", "indices[0] is 2", "[0, 2)");
  OP_FAILS(of_one_hot(s, idx, -1, &r), INVALID, "of_one_hot", "num_classes is -1");
  of_tensor_t* m = make_tensor(s, F32, DIMS(2, 3), VALS(0, 1, 0, NAN, 0, -2));
  OP_EXPECT(of_nonzero(s, m, &r), I64, DIMS(3, 2), VALS(0, 1, 1, 0, 1, 2), 0);
  OP_FAILS(of_nonzero(s, NULL, &r), INVALID, "of_nonzero", "x");
  of_tensor_release(m);
  of_tensor_release(idx);
  of_tensor_release(i8);
  of_tensor_release(mask);
  of_tensor_release(x);
}

static void test_layout(void** state) {
  of_session_t* s = *state;
  of_tensor_t* m = make_tensor(s, F32, DIMS(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
  OP_EXPECT(of_tril(s, m, 0, &r), F32, DIMS(3, 3), VALS(1, 0, 0, 4, 5, 0, 7, 8, 9), 0);
  OP_EXPECT(of_tril(s, m, -1, &r), F32, DIMS(3, 3), VALS(0, 0, 0, 4, 0, 0, 7, 8, 0), 0);
  OP_EXPECT(of_triu(s, m, 1, &r), F32, DIMS(3, 3), VALS(0, 2, 3, 0, 0, 6, 0, 0, 0), 0);
  OP_EXPECT(of_flip(s, m, DIMS(0), &r), F32, DIMS(3, 3), VALS(7, 8, 9, 4, 5, 6, 1, 2, 3), 0);
  OP_EXPECT(of_flip(s, m, DIMS(-1, 0), &r), F32, DIMS(3, 3), VALS(9, 8, 7, 6, 5, 4, 3, 2, 1), 0);
  OP_EXPECT(of_roll(s, m, DIMS(1), DIMS(1), &r), F32, DIMS(3, 3), VALS(3, 1, 2, 6, 4, 5, 9, 7, 8), 0);
  OP_EXPECT(of_roll(s, m, DIMS(1), NULL, 0, &r), F32, DIMS(3, 3), VALS(9, 1, 2, 3, 4, 5, 6, 7, 8), 0);
  of_tensor_t* v = make_tensor(s, F32, DIMS(2), VALS(1, 2));
  OP_EXPECT(of_repeat(s, v, DIMS(2, 2), &r), F32, DIMS(2, 4), VALS(1, 2, 1, 2, 1, 2, 1, 2), 0);
  OP_EXPECT(of_slice(s, m, 1, INT64_MAX, INT64_MIN, -1, &r), F32, DIMS(3, 3), VALS(3, 2, 1, 6, 5, 4, 9, 8, 7), 0);
  OP_EXPECT(of_slice(s, m, 0, 0, 100, 2, &r), F32, DIMS(2, 3), VALS(1, 2, 3, 7, 8, 9), 0);
  OP_EXPECT(of_slice(s, m, -1, -2, 3, 1, &r), F32, DIMS(3, 2), VALS(2, 3, 5, 6, 8, 9), 0);

  ASSERT_OK(of_tensor_set_requires_grad(m, 1));
  GRAD_EXPECT(m, of_slice(s, m, 1, 2, INT64_MIN, -2, &r), F32, DIMS(3, 3), VALS(1, 0, 1, 1, 0, 1, 1, 0, 1), 0);
  ASSERT_OK(of_tensor_set_requires_grad(v, 1));
  GRAD_EXPECT(v, of_repeat(s, v, DIMS(3, 2), &r), F32, DIMS(2), VALS(6, 6), 0);

  OP_FAILS(of_slice(s, m, 0, 0, 3, 0, &r), INVALID, "of_slice", "step must not be 0");
  OP_FAILS(of_tril(s, v, 0, &r), INVALID, "of_tril", "at least 2 dims");
  OP_FAILS(of_flip(s, m, NULL, 1, &r), INVALID, "of_flip", "dims");
  OP_FAILS(of_roll(s, m, DIMS(1, 2), DIMS(0), &r), INVALID, "of_roll", "shifts has 2 entries but dims has 1");
  OP_FAILS(of_repeat(s, m, DIMS(2), &r), INVALID, "of_repeat", "fewer than the 2 dims");
  of_tensor_release(v);
  of_tensor_release(m);
}

static void test_ordering(void** state) {
  of_session_t* s = *state;
  of_tensor_t* x = make_tensor(s, F32, DIMS(2, 4), VALS(3, 1, NAN, 1, 2, 2, -1, 5));
  OP_EXPECT(of_argmin(s, x, 1, 0, &r), I64, DIMS(2), VALS(2, 2), 0); /* the NaN, then the first -1 */
  OP_EXPECT(of_argmin(s, x, 0, 1, &r), I64, DIMS(1, 4), VALS(1, 0, 0, 0), 0);

  of_tensor_t* v = OUT_SENTINEL;
  of_tensor_t* i = OUT_SENTINEL;
  /* Stable: the two 1s (and the two 2s) keep their order; NaN sorts last ascending, first descending. */
  ASSERT_OK(of_sort(s, x, -1, 0, &v, &i));
  EXPECT_TENSOR(v, F32, DIMS(2, 4), VALS(1, 1, 3, NAN, -1, 2, 2, 5), 0);
  EXPECT_TENSOR(i, I64, DIMS(2, 4), VALS(1, 3, 0, 2, 2, 0, 1, 3), 0);
  of_tensor_release(v);
  of_tensor_release(i);
  ASSERT_OK(of_sort(s, x, 1, 1, &v, &i));
  EXPECT_TENSOR(v, F32, DIMS(2, 4), VALS(NAN, 3, 1, 1, 5, 2, 2, -1), 0);
  EXPECT_TENSOR(i, I64, DIMS(2, 4), VALS(2, 0, 1, 3, 3, 0, 1, 2), 0);
  of_tensor_release(v);
  of_tensor_release(i);
  ASSERT_OK(of_topk(s, x, 2, 1, 0, 1, &v, &i));
  EXPECT_TENSOR(v, F32, DIMS(2, 2), VALS(1, 1, -1, 2), 0);
  EXPECT_TENSOR(i, I64, DIMS(2, 2), VALS(1, 3, 2, 0), 0);
  of_tensor_release(v);
  of_tensor_release(i);

  /* The values' gradient goes back to where they came from. */
  ASSERT_OK(of_tensor_set_requires_grad(x, 1));
  ASSERT_OK(of_topk(s, x, 2, 1, 1, 1, &v, &i));
  EXPECT_TENSOR(i, I64, DIMS(2, 2), VALS(2, 0, 3, 0), 0);
  of_tensor_t* total = NULL;
  ASSERT_OK(of_sum(s, v, NULL, 0, 0, &total));
  ASSERT_OK(of_tensor_backward(s, total, NULL, 0));
  of_tensor_t* g = NULL;
  ASSERT_OK(of_tensor_grad(x, &g));
  EXPECT_TENSOR(g, F32, DIMS(2, 4), VALS(1, 0, 1, 0, 1, 0, 0, 1), 0);
  of_tensor_release(g);
  of_tensor_release(total);
  of_tensor_release(v);
  of_tensor_release(i);

  v = OUT_SENTINEL;
  i = OUT_SENTINEL;
  ASSERT_STATUS(of_topk(s, x, 5, 1, 1, 1, &v, &i), INVALID, "of_topk", "k 5 is out of range");
  ASSERT_STATUS(of_topk(s, x, 1, 1, 2, 1, &v, &i), INVALID, "of_topk", "largest");
  ASSERT_STATUS(of_sort(s, x, 1, 0, &v, NULL), INVALID, "of_sort", "out_indices");
  ASSERT_STATUS(of_sort(s, NULL, 1, 0, &v, &i), INVALID, "of_sort", "x");
  assert_ptr_equal(v, OUT_SENTINEL);
  assert_ptr_equal(i, OUT_SENTINEL);
  OP_FAILS(of_argmin(s, x, 2, 0, &r), INVALID, "of_argmin", "dim");
  of_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_embedding, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_gather_scatter, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_masked_fill_one_hot, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_layout, of_test_setup_session, of_test_teardown_session),
      cmocka_unit_test_setup_teardown(test_ordering, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
