/* CMocka tests of the indexing ops of the C ABI: every function on small inputs whose results are
 * worked out by hand here, gradients through of_tensor_backward, and the error paths. */
#include "capi_op_util.h"

/* Runs `call`, which writes its result into the tensor `r`, checks r against the expectation in the
 * remaining arguments (as EXPECT_TENSOR) and releases it. */
#define OP_EXPECT(call, ...)       \
  do {                             \
    of_tensor_t* r = NULL;         \
    ASSERT_OK(call);               \
    EXPECT_TENSOR(r, __VA_ARGS__); \
    of_tensor_release(r);          \
  } while (0)

/* Fails unless `call` fails with `code` and the words, leaving the tensor `r` untouched. */
#define OP_FAILS(call, code, ...)           \
  do {                                      \
    of_tensor_t* r = OUT_SENTINEL;          \
    ASSERT_STATUS(call, code, __VA_ARGS__); \
    assert_ptr_equal(r, OUT_SENTINEL);      \
  } while (0)

#define INVALID OF_STATUS_INVALID_ARGUMENT

/* The gradient of sum(y) w.r.t. the leaf `x`, checked against the expectation, after y = call. */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_embedding, of_test_setup_session, of_test_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
