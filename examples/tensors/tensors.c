/* A tour of the oneflow_c C ABI: dtypes, symbolic dims, sessions, tensors and errors.
 *
 *   build/release/examples/tensors/tensors
 *
 * Every call returns NULL or an error status; this example checks each one with CHECK below, which
 * prints the message and exits. A real program would clean up and report instead. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <oneflow/oneflow_c.h>

static void check(of_status_t* status, const char* what) {
  if (status == NULL) return;
  fprintf(stderr, "%s failed: [%s] %s\n", what, of_status_code_name(of_status_code(status)),
          of_status_message(status));
  of_status_destroy(status);
  exit(1);
}
#define CHECK(call) check((call), #call)

static void print_tensor(const char* label, const of_tensor_t* t) {
  const of_dtype_t* dtype = NULL;
  size_t ndim = 0;
  int64_t dims[8];
  int64_t numel = 0;
  CHECK(of_tensor_dtype(t, &dtype));
  CHECK(of_tensor_ndim(t, &ndim));
  CHECK(of_tensor_dims(t, dims, 8));
  CHECK(of_tensor_numel(t, &numel));
  printf("%-10s %-8s (", label, of_dtype_name(dtype));
  for (size_t i = 0; i < ndim; ++i) printf(i ? ", %" PRId64 : "%" PRId64, dims[i]);
  printf(ndim == 1 ? ",) [" : ") [");
  /* Read the values back as double whatever the dtype, by promoting through a float64 copy. */
  double* values = malloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
  if (dtype == of_dtype_float64()) {
    CHECK(of_tensor_copy_to_host(t, values, sizeof(double) * (size_t)numel));
  } else if (dtype == of_dtype_float32()) {
    float* f = malloc(sizeof(float) * (size_t)(numel > 0 ? numel : 1));
    CHECK(of_tensor_copy_to_host(t, f, sizeof(float) * (size_t)numel));
    for (int64_t i = 0; i < numel; ++i) values[i] = f[i];
    free(f);
  } else if (dtype == of_dtype_int64()) {
    int64_t* v = malloc(sizeof(int64_t) * (size_t)(numel > 0 ? numel : 1));
    CHECK(of_tensor_copy_to_host(t, v, sizeof(int64_t) * (size_t)numel));
    for (int64_t i = 0; i < numel; ++i) values[i] = (double)v[i];
    free(v);
  }
  for (int64_t i = 0; i < numel && i < 8; ++i) printf(i ? ", %.4g" : "%.4g", values[i]);
  printf(numel > 8 ? ", ...]\n" : "]\n");
  free(values);
}

int main(void) {
  printf("oneflow_c %s (ABI %d), CUDA backend built: %s\n\n", of_version_string(), of_abi_version(),
         of_cuda_is_built() ? "yes" : "no");

  /* Dtypes are interned: the same dtype is the same pointer, however it was obtained. */
  const of_dtype_t* by_code = NULL;
  const of_dtype_t* by_name = NULL;
  const of_dtype_t* promoted = NULL;
  CHECK(of_dtype_from_code(OF_DTYPE_FLOAT32, &by_code));
  CHECK(of_dtype_from_name("float", &by_name));
  CHECK(of_dtype_promote(of_dtype_int64(), of_dtype_float32(), &promoted));
  printf("dtypes:  float32 by code, by name \"float\", and int64+float32 promoted are %s\n",
         (by_code == of_dtype_float32() && by_name == by_code && promoted == by_code) ? "one pointer" : "DIFFERENT");
  CHECK(of_dtype_promote(of_dtype_uint8(), of_dtype_int8(), &promoted));
  printf("         uint8 + int8 promotes to %s; bfloat16 is %zu bytes\n\n", of_dtype_name(promoted),
         of_dtype_size(of_dtype_bfloat16()));

  of_session_options_t options;
  of_session_options_init(&options);
  options.seed = 42;
  of_session_t* session = NULL;
  CHECK(of_session_create(&options, &session));

  /* Symbolic dims: a named symbol is a stable negative int64_t within its session. */
  int64_t batch = 0;
  const char* name = NULL;
  size_t name_length = 0;
  CHECK(of_session_dim_symbol(session, "N", &batch));
  CHECK(of_dim_symbol_name(batch, &name, &name_length));
  printf("dims:    symbol '%s' is %" PRId64 ", OF_DIM_UNKNOWN is %lld\n\n", name, batch, OF_DIM_UNKNOWN);

  const int64_t dims[2] = {2, 3};
  const float data[6] = {1, 2, 3, 4, 5, 6};
  of_tensor_t *x = NULL, *zeros = NULL, *noise = NULL, *steps = NULL;
  CHECK(of_tensor_from_data(session, of_dtype_float32(), dims, 2, data, sizeof data, NULL, &x));
  CHECK(of_tensor_zeros(session, of_dtype_float64(), dims, 2, NULL, &zeros));
  CHECK(of_tensor_randn(session, of_dtype_float32(), dims, 2, NULL, &noise));
  CHECK(of_tensor_arange(session, 0, 10, 3, of_dtype_int64(), NULL, &steps));
  print_tensor("from_data", x);
  print_tensor("zeros", zeros);
  print_tensor("randn", noise);
  print_tensor("arange", steps);

  /* Errors come back as statuses with a message that names the problem. */
  const int64_t symbolic[2] = {batch, 3};
  of_tensor_t* never = NULL;
  of_status_t* st = of_tensor_zeros(session, of_dtype_float32(), symbolic, 2, NULL, &never);
  printf("\nerror:   [%s] %s\n", of_status_code_name(of_status_code(st)), of_status_message(st));
  of_status_destroy(st);
  st = of_tensor_full(session, of_dtype_uint8(), dims, 2, 300.0, NULL, &never);
  printf("error:   [%s] %s\n", of_status_code_name(of_status_code(st)), of_status_message(st));
  of_status_destroy(st);

  of_tensor_release(x);
  of_tensor_release(zeros);
  of_tensor_release(noise);
  of_tensor_release(steps);
  of_session_destroy(session);
  return 0;
}
