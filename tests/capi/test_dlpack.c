/* DLPack exchange: export and import round trips (the same memory, values, strides and dtype handles),
 * the producer's deleter exactly once on every path, read-only imports refused by in-place writers,
 * and the layout of <oneflow/dlpack.h> (DLPack 1.1). */
#include <pthread.h>
#include <stdatomic.h>

#include <oneflow/dlpack.h>

#include "capi_test_util.h"

/* The published layout (dlpack.h 1.x, LP64). */
_Static_assert(sizeof(DLDevice) == 8, "DLDevice");
_Static_assert(sizeof(DLDataType) == 4, "DLDataType");
_Static_assert(sizeof(DLTensor) == 48, "DLTensor");
_Static_assert(offsetof(DLTensor, device) == 8 && offsetof(DLTensor, ndim) == 16 && offsetof(DLTensor, dtype) == 20,
               "DLTensor fields");
_Static_assert(offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 &&
                   offsetof(DLTensor, byte_offset) == 40,
               "DLTensor fields");
_Static_assert(sizeof(DLManagedTensor) == 64 && offsetof(DLManagedTensor, manager_ctx) == 48 &&
                   offsetof(DLManagedTensor, deleter) == 56,
               "DLManagedTensor");
_Static_assert(sizeof(DLManagedTensorVersioned) == 80 && offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
                   offsetof(DLManagedTensorVersioned, deleter) == 16 && offsetof(DLManagedTensorVersioned, flags) == 24 &&
                   offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
               "DLManagedTensorVersioned");
_Static_assert(DLPACK_FLAG_BITMASK_READ_ONLY == 1 && DLPACK_FLAG_BITMASK_IS_COPIED == 2, "flags");
_Static_assert((int)kDLCPU == (int)OF_DEVICE_CPU && (int)kDLCUDA == (int)OF_DEVICE_CUDA, "device types are DLPack's");

/* ---- a producer of our own: managed tensors over malloc'd memory, counting their deleters ---- */

static atomic_int deleted;

typedef struct {
  DLManagedTensorVersioned managed;
  DLManagedTensor legacy;
  int64_t shape[4], strides[4];
  void* memory;
} producer_t;

static void free_producer(producer_t* p) {
  free(p->memory);
  free(p);
  atomic_fetch_add(&deleted, 1);
}
static void delete_versioned(DLManagedTensorVersioned* self) { free_producer((producer_t*)self->manager_ctx); }
static void delete_legacy(DLManagedTensor* self) { free_producer((producer_t*)self->manager_ctx); }

/* A producer tensor of `ndim` sizes (strides NULL: row-major) over `bytes` bytes of memory filled
 * with `fill` (may be NULL). The versioned and the legacy struct describe the same DLTensor. */
static producer_t* produce(DLDataType dtype, int32_t ndim, const int64_t* shape, const int64_t* strides, size_t bytes,
                           const void* fill) {
  producer_t* p = calloc(1, sizeof *p);
  assert_non_null(p);
  p->memory = malloc(bytes == 0 ? 1 : bytes);
  assert_non_null(p->memory);
  if (fill != NULL) memcpy(p->memory, fill, bytes);
  DLTensor t = {.data = p->memory, .device = {kDLCPU, 0}, .ndim = ndim, .dtype = dtype, .shape = p->shape,
                .strides = strides ? p->strides : NULL, .byte_offset = 0};
  for (int32_t d = 0; d < ndim; ++d) {
    p->shape[d] = shape[d];
    if (strides) p->strides[d] = strides[d];
  }
  p->managed = (DLManagedTensorVersioned){.version = {1, 1}, .manager_ctx = p, .deleter = delete_versioned,
                                          .flags = 0, .dl_tensor = t};
  p->legacy = (DLManagedTensor){.dl_tensor = t, .manager_ctx = p, .deleter = delete_legacy};
  return p;
}

static const DLDataType kF32 = {kDLFloat, 32, 1};

/* ---- export ---------------------------------------------------------------------------------- */

static void test_export_shares_memory(void** state) {
  of_session_t* s = *state;
  const float values[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_data(s, of_dtype_float32(), dims, 2, values, sizeof values, NULL, &t));
  DLManagedTensorVersioned* m = NULL;
  ASSERT_OK(of_tensor_to_dlpack(t, &m));
  assert_int_equal(m->version.major, 1);
  assert_int_equal(m->version.minor, 1);
  assert_int_equal(m->flags, 0);
  const DLTensor* dl = &m->dl_tensor;
  assert_int_equal(dl->device.device_type, kDLCPU);
  assert_int_equal(dl->device.device_id, 0);
  assert_int_equal(dl->ndim, 2);
  assert_int_equal(dl->dtype.code, kDLFloat);
  assert_int_equal(dl->dtype.bits, 32);
  assert_int_equal(dl->dtype.lanes, 1);
  assert_int_equal(dl->shape[0], 2);
  assert_int_equal(dl->shape[1], 3);
  assert_int_equal(dl->strides[0], 3);
  assert_int_equal(dl->strides[1], 1);
  assert_int_equal(dl->byte_offset, 0);
  /* The tensor's own memory: a write through DLPack is seen by the tensor, even after its handle is
   * released (the managed tensor keeps the memory alive). */
  ((float*)dl->data)[4] = 50.0f;
  of_tensor_t* sum = NULL;
  ASSERT_OK(of_sum(s, t, NULL, 0, 0, &sum));
  float total = 0;
  ASSERT_OK(of_tensor_copy_to_host(sum, &total, sizeof total));
  assert_float_equal(total, 66.0f, 0.0f);
  of_tensor_release(sum);
  of_tensor_release(t);
  assert_float_equal(((float*)dl->data)[5], 6.0f, 0.0f);
  m->deleter(m);
}

static void test_export_views_keep_strides(void** state) {
  of_session_t* s = *state;
  of_tensor_t *x = NULL, *tr = NULL, *nar = NULL, *ex = NULL;
  const int64_t dims[2] = {3, 4};
  ASSERT_OK(of_tensor_arange(s, 0, 12, 1, of_dtype_int32(), NULL, &x));
  of_tensor_t* x2 = NULL;
  ASSERT_OK(of_reshape(s, x, dims, 2, &x2));
  ASSERT_OK(of_transpose(s, x2, 0, 1, &tr));  /* (4, 3), strides (1, 4) */
  ASSERT_OK(of_narrow(s, x2, 1, 1, 2, &nar)); /* (3, 2), strides (4, 1), offset 1 */
  const int64_t edims[3] = {2, 3, 4};
  ASSERT_OK(of_expand(s, x2, edims, 3, &ex)); /* strides (0, 4, 1) */
  DLManagedTensor* m = NULL;
  ASSERT_OK(of_tensor_to_dlpack_legacy(tr, &m));
  assert_int_equal(m->dl_tensor.strides[0], 1);
  assert_int_equal(m->dl_tensor.strides[1], 4);
  const int32_t* base = m->dl_tensor.data;
  assert_int_equal(base[1 * 1 + 2 * 4], 9); /* tr[1][2] = x2[2][1] */
  m->deleter(m);
  ASSERT_OK(of_tensor_to_dlpack_legacy(nar, &m));
  assert_int_equal(((const int32_t*)m->dl_tensor.data)[0], 1); /* data is the first element */
  assert_int_equal(m->dl_tensor.byte_offset, 0);
  assert_int_equal(m->dl_tensor.strides[0], 4);
  m->deleter(m);
  DLManagedTensorVersioned* v = NULL;
  ASSERT_OK(of_tensor_to_dlpack(ex, &v));
  assert_int_equal(v->dl_tensor.strides[0], 0);
  /* Imported back, the view is a strided tensor with the same values. */
  of_tensor_t* back = NULL;
  ASSERT_OK(of_tensor_from_dlpack(v, &back));
  of_tensor_t* eq = NULL;
  ASSERT_OK(of_eq(s, back, ex, &eq));
  of_tensor_t* all = NULL;
  ASSERT_OK(of_sum(s, eq, NULL, 0, 0, &all));
  int64_t n = 0;
  ASSERT_OK(of_tensor_copy_to_host(all, &n, sizeof n));
  assert_int_equal(n, 24);
  of_tensor_release(all);
  of_tensor_release(eq);
  of_tensor_release(back);
  of_tensor_release(ex);
  of_tensor_release(nar);
  of_tensor_release(tr);
  of_tensor_release(x2);
  of_tensor_release(x);
}

static void test_round_trip_every_dtype(void** state) {
  of_session_t* s = *state;
  for (int i = 0; i < OF_TEST_NUM_DTYPES; ++i) {
    const of_dtype_t* dt = of_test_dtype_getters[i]();
    const int64_t dims[2] = {2, 3};
    of_tensor_t *t = NULL, *back = NULL, *legacy_back = NULL;
    ASSERT_OK(of_tensor_ones(s, dt, dims, 2, NULL, &t));
    DLManagedTensorVersioned* m = NULL;
    ASSERT_OK(of_tensor_to_dlpack(t, &m));
    uint8_t code, bits;
    uint16_t lanes;
    ASSERT_OK(of_dtype_to_dlpack(dt, &code, &bits, &lanes));
    assert_int_equal(m->dl_tensor.dtype.code, code);
    assert_int_equal(m->dl_tensor.dtype.bits, bits);
    void* data = m->dl_tensor.data;
    ASSERT_OK(of_tensor_from_dlpack(m, &back));
    const of_dtype_t* got = NULL;
    ASSERT_OK(of_tensor_dtype(back, &got));
    assert_ptr_equal(got, dt); /* the interned handle */
    of_test_assert_same_bytes(t, back);
    DLManagedTensorVersioned* again = NULL;
    ASSERT_OK(of_tensor_to_dlpack(back, &again));
    assert_ptr_equal(again->dl_tensor.data, data); /* the same memory, no copy */
    again->deleter(again);
    DLManagedTensor* lm = NULL;
    ASSERT_OK(of_tensor_to_dlpack_legacy(t, &lm));
    ASSERT_OK(of_tensor_from_dlpack_legacy(lm, &legacy_back));
    of_test_assert_same_bytes(t, legacy_back);
    of_tensor_release(legacy_back);
    of_tensor_release(back);
    of_tensor_release(t);
  }
}

static void test_export_errors(void** state) {
  of_session_t* s = *state;
  DLManagedTensorVersioned* m = SENTINEL_PTR(DLManagedTensorVersioned*);
  ASSERT_STATUS(of_tensor_to_dlpack(NULL, &m), OF_STATUS_INVALID_ARGUMENT, "tensor");
  assert_ptr_equal(m, SENTINEL_PTR(DLManagedTensorVersioned*));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "g", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  const int64_t dims[1] = {OF_DIM_UNKNOWN};
  of_tensor_t* x = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", of_dtype_float32(), dims, 1, &x));
  ASSERT_STATUS(of_tensor_to_dlpack(x, &m), OF_STATUS_FAILED_PRECONDITION, "lazy");
  of_tensor_release(x);
  of_graph_destroy(g);
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_zeros(s, of_dtype_float32(), dims + 0, 0, NULL, &t));
  ASSERT_STATUS(of_tensor_to_dlpack(t, NULL), OF_STATUS_INVALID_ARGUMENT, "out_managed");
  of_tensor_release(t);
}

/* ---- import ---------------------------------------------------------------------------------- */

static void test_import_without_copy(void** state) {
  of_session_t* s = *state;
  const float values[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  atomic_store(&deleted, 0);
  producer_t* p = produce(kF32, 2, shape, NULL, sizeof values, values);
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_dlpack(&p->managed, &t));
  float* memory = p->memory;
  memory[0] = 10.0f; /* the producer's writes are seen: no copy */
  of_tensor_t* sum = NULL;
  ASSERT_OK(of_sum(s, t, NULL, 0, 0, &sum));
  float total = 0;
  ASSERT_OK(of_tensor_copy_to_host(sum, &total, sizeof total));
  assert_float_equal(total, 30.0f, 0.0f);
  /* An in-place write through oneflow_c lands in the producer's memory. */
  ASSERT_OK(of_init_constant(s, t, 7.0));
  assert_float_equal(memory[5], 7.0f, 0.0f);
  /* Views keep the import alive: the deleter runs with the last of them. */
  of_tensor_t* view = NULL;
  ASSERT_OK(of_narrow(s, t, 1, 1, 1, &view));
  of_tensor_release(t);
  of_tensor_release(sum);
  assert_int_equal(atomic_load(&deleted), 0);
  of_tensor_release(view);
  assert_int_equal(atomic_load(&deleted), 1);
}

static void test_import_strided_and_offset(void** state) {
  of_session_t* s = *state;
  /* A (2, 2) view with strides (1, 3) at byte offset 4 of a 3x3 int64... of int32 memory 0..8. */
  int32_t values[9];
  for (int i = 0; i < 9; ++i) values[i] = i;
  const int64_t shape[2] = {2, 2}, strides[2] = {1, 3};
  producer_t* p = produce((DLDataType){kDLInt, 32, 1}, 2, shape, strides, sizeof values, values);
  p->managed.dl_tensor.byte_offset = 4;
  of_tensor_t *t = NULL, *c = NULL;
  ASSERT_OK(of_tensor_from_dlpack(&p->managed, &t));
  ASSERT_OK(of_contiguous(s, t, &c));
  int32_t got[4];
  ASSERT_OK(of_tensor_copy_to_host(c, got, sizeof got));
  assert_int_equal(got[0], 1); /* [i][j] = 1 + i + 3 j */
  assert_int_equal(got[1], 4);
  assert_int_equal(got[2], 2);
  assert_int_equal(got[3], 5);
  DLManagedTensorVersioned* m = NULL;
  ASSERT_OK(of_tensor_to_dlpack(t, &m)); /* exported again with its strides */
  assert_int_equal(m->dl_tensor.strides[0], 1);
  assert_int_equal(m->dl_tensor.strides[1], 3);
  assert_ptr_equal(m->dl_tensor.data, (char*)p->memory + 4);
  m->deleter(m);
  of_tensor_release(c);
  of_tensor_release(t);
}

/* Each failure calls the deleter exactly once, before returning, and leaves *out_tensor alone. */
static void expect_refused(producer_t* p, int legacy, of_status_code_t code, const char* word) {
  atomic_store(&deleted, 0);
  of_tensor_t* t = SENTINEL_PTR(of_tensor_t*);
  of_status_t* status = legacy ? of_tensor_from_dlpack_legacy(&p->legacy, &t) : of_tensor_from_dlpack(&p->managed, &t);
  ASSERT_STATUS(status, code, word);
  assert_ptr_equal(t, SENTINEL_PTR(of_tensor_t*));
  assert_int_equal(atomic_load(&deleted), 1);
}

static void test_import_failures_call_the_deleter(void** state) {
  (void)state;
  const int64_t shape[2] = {2, 2};
  producer_t* p = produce(kF32, 2, shape, NULL, 16, NULL);
  p->managed.version.major = 2;
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "version");
  p = produce((DLDataType){kDLComplex, 64, 1}, 2, shape, NULL, 32, NULL);
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "complex64");
  p = produce((DLDataType){kDLFloat, 32, 4}, 2, shape, NULL, 64, NULL);
  expect_refused(p, 1, OF_STATUS_INVALID_ARGUMENT, "lanes");
  p = produce((DLDataType){kDLFloat, 8, 1}, 2, shape, NULL, 4, NULL);
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "dtype");
  p = produce(kF32, 2, shape, NULL, 16, NULL);
  p->managed.dl_tensor.device.device_type = kDLCUDA;
  expect_refused(p, 0, OF_STATUS_UNIMPLEMENTED, "CUDA");
  p = produce(kF32, 2, shape, NULL, 16, NULL);
  p->legacy.dl_tensor.device.device_type = kDLVulkan;
  expect_refused(p, 1, OF_STATUS_INVALID_ARGUMENT, "device_type");
  p = produce(kF32, 2, shape, NULL, 16, NULL);
  p->managed.dl_tensor.byte_offset = 2; /* misaligned first element */
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "aligned");
  const int64_t negative[2] = {2, -1};
  p = produce(kF32, 2, shape, negative, 16, NULL);
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "negative");
  const int64_t bad_shape[2] = {2, -3};
  p = produce(kF32, 2, bad_shape, NULL, 16, NULL);
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "shape");
  const uint8_t bools[4] = {0, 1, 2, 1};
  p = produce((DLDataType){kDLBool, 8, 1}, 2, shape, NULL, 4, bools);
  expect_refused(p, 1, OF_STATUS_INVALID_ARGUMENT, "bool");
  p = produce(kF32, 2, shape, NULL, 16, NULL);
  p->managed.dl_tensor.data = NULL; /* (the producer still frees its memory in the deleter) */
  p->managed.dl_tensor.byte_offset = 8;
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "NULL");
  p = produce(kF32, 2, shape, NULL, 16, NULL);
  p->managed.dl_tensor.ndim = -1;
  expect_refused(p, 0, OF_STATUS_INVALID_ARGUMENT, "ndim");
  /* out_tensor NULL: refused, and the struct is still released. */
  p = produce(kF32, 2, shape, NULL, 16, NULL);
  atomic_store(&deleted, 0);
  ASSERT_STATUS(of_tensor_from_dlpack(&p->managed, NULL), OF_STATUS_INVALID_ARGUMENT, "out_tensor");
  assert_int_equal(atomic_load(&deleted), 1);
  ASSERT_STATUS(of_tensor_from_dlpack(NULL, NULL), OF_STATUS_INVALID_ARGUMENT, "managed");
  /* A NULL deleter is allowed (the producer frees the memory itself). */
  float memory[4] = {1, 2, 3, 4};
  DLManagedTensor unmanaged = {.dl_tensor = {.data = memory, .device = {kDLCPU, 0}, .ndim = 2, .dtype = kF32,
                                             .shape = shape, .strides = NULL, .byte_offset = 0}};
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_dlpack_legacy(&unmanaged, &t));
  of_tensor_release(t);
}

static void test_import_zero_size_and_0d(void** state) {
  (void)state;
  const int64_t shape[2] = {0, 5};
  atomic_store(&deleted, 0);
  producer_t* p = produce(kF32, 2, shape, NULL, 0, NULL);
  p->managed.dl_tensor.data = NULL; /* what DLPack recommends for an empty tensor */
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_dlpack(&p->managed, &t));
  int64_t n = -1;
  ASSERT_OK(of_tensor_numel(t, &n));
  assert_int_equal(n, 0);
  of_tensor_release(t);
  const double value = 2.5;
  p = produce((DLDataType){kDLFloat, 64, 1}, 0, NULL, NULL, sizeof value, &value);
  ASSERT_OK(of_tensor_from_dlpack_legacy(&p->legacy, &t));
  double got = 0;
  ASSERT_OK(of_tensor_copy_to_host(t, &got, sizeof got));
  assert_float_equal(got, 2.5, 0.0);
  of_tensor_release(t);
  assert_int_equal(atomic_load(&deleted), 2);
}

static void test_read_only_import(void** state) {
  of_session_t* s = *state;
  const float values[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  producer_t* p = produce(kF32, 1, shape, NULL, sizeof values, values);
  p->managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_dlpack(&p->managed, &t));
  /* Reading works; every in-place writer refuses, and nothing is written. */
  of_tensor_t* y = NULL;
  ASSERT_OK(of_mul_scalar(s, t, 2.0, &y));
  ASSERT_OK(of_tensor_set_requires_grad(t, 1));
  of_optimizer_t* opt = SENTINEL_PTR(of_optimizer_t*);
  ASSERT_STATUS(of_optimizer_sgd_create(s, &t, 1, NULL, &opt), OF_STATUS_INVALID_ARGUMENT, "read-only");
  assert_ptr_equal(opt, SENTINEL_PTR(of_optimizer_t*));
  ASSERT_OK(of_tensor_set_requires_grad(t, 0));
  ASSERT_STATUS(of_init_constant(s, t, 0.0), OF_STATUS_INVALID_ARGUMENT, "read-only");
  of_tensor_t* view = NULL;
  ASSERT_OK(of_narrow(s, t, 0, 1, 2, &view)); /* views share the flag */
  ASSERT_STATUS(of_init_uniform(s, view, 0.0, 1.0), OF_STATUS_INVALID_ARGUMENT, "read-only");
  /* batch_norm's running statistics, eagerly and traced into a graph */
  const int64_t xdims[2] = {2, 4};
  of_tensor_t *x = NULL, *var = NULL, *out = SENTINEL_PTR(of_tensor_t*);
  ASSERT_OK(of_tensor_randn(s, of_dtype_float32(), xdims, 2, NULL, &x));
  ASSERT_OK(of_tensor_ones(s, of_dtype_float32(), shape, 1, NULL, &var));
  ASSERT_STATUS(of_batch_norm(s, x, NULL, NULL, t, var, NULL, &out), OF_STATUS_INVALID_ARGUMENT, "running_mean",
                "read-only");
  assert_ptr_equal(out, SENTINEL_PTR(of_tensor_t*));
  of_graph_t* g = NULL;
  ASSERT_OK(of_graph_create(s, "bn", NULL, &g));
  ASSERT_OK(of_graph_begin_build(g));
  of_tensor_t* lx = NULL;
  ASSERT_OK(of_graph_add_input(g, "x", of_dtype_float32(), xdims, 2, &lx));
  ASSERT_STATUS(of_batch_norm(s, lx, NULL, NULL, t, var, NULL, &out), OF_STATUS_INVALID_ARGUMENT, "read-only");
  of_tensor_release(lx);
  of_graph_destroy(g);
  float check[4];
  ASSERT_OK(of_tensor_copy_to_host(t, check, sizeof check));
  assert_memory_equal(check, values, sizeof values);
  /* Exported again it says READ_ONLY; the legacy struct cannot, so that export is refused. */
  DLManagedTensorVersioned* m = NULL;
  ASSERT_OK(of_tensor_to_dlpack(view, &m));
  assert_int_equal(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
  m->deleter(m);
  DLManagedTensor* lm = SENTINEL_PTR(DLManagedTensor*);
  ASSERT_STATUS(of_tensor_to_dlpack_legacy(t, &lm), OF_STATUS_FAILED_PRECONDITION, "read-only");
  assert_ptr_equal(lm, SENTINEL_PTR(DLManagedTensor*));
  of_tensor_release(var);
  of_tensor_release(x);
  of_tensor_release(view);
  of_tensor_release(y);
  of_tensor_release(t);
}

static void* release_on_thread(void* tensor) {
  of_tensor_release(tensor);
  return NULL;
}

static void* delete_on_thread(void* managed) {
  DLManagedTensorVersioned* m = managed;
  m->deleter(m);
  return NULL;
}

static void test_release_from_another_thread(void** state) {
  (void)state;
  const int64_t shape[1] = {3};
  atomic_store(&deleted, 0);
  producer_t* p = produce(kF32, 1, shape, NULL, 12, NULL);
  of_tensor_t* t = NULL;
  ASSERT_OK(of_tensor_from_dlpack(&p->managed, &t));
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, release_on_thread, t), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(atomic_load(&deleted), 1);
  /* And an export's deleter called on another thread releases the tensor there. */
  of_tensor_t* u = NULL;
  ASSERT_OK(of_tensor_zeros(*(of_session_t**)state, of_dtype_float32(), shape, 1, NULL, &u));
  DLManagedTensorVersioned* m = NULL;
  ASSERT_OK(of_tensor_to_dlpack(u, &m));
  of_tensor_release(u);
  assert_int_equal(pthread_create(&thread, NULL, delete_on_thread, m), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
}

int main(void) {
#define WITH_SESSION(f) cmocka_unit_test_setup_teardown(f, of_test_setup_session, of_test_teardown_session)
  const struct CMUnitTest tests[] = {
      WITH_SESSION(test_export_shares_memory),
      WITH_SESSION(test_export_views_keep_strides),
      WITH_SESSION(test_round_trip_every_dtype),
      WITH_SESSION(test_export_errors),
      WITH_SESSION(test_import_without_copy),
      WITH_SESSION(test_import_strided_and_offset),
      WITH_SESSION(test_import_failures_call_the_deleter),
      WITH_SESSION(test_import_zero_size_and_0d),
      WITH_SESSION(test_read_only_import),
      WITH_SESSION(test_release_from_another_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
