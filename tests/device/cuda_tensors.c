/* CUDA tensors through the C ABI: creation on the GPU, copies back, and the same random stream as
 * the CPU for the same seed. Exits 77 (ctest: skipped) where this build or machine has no CUDA device,
 * saying why. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <oneflow/oneflow_c.h>

#define SKIP 77

static int failures = 0;
#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

static int ok(of_status_t* st) {
  if (st == NULL) return 1;
  fprintf(stderr, "unexpected error: %s\n", of_status_message(st));
  of_status_free(st);
  ++failures;
  return 0;
}

int main(void) {
  of_session_options_t options;
  of_session_options_init(&options);
  options.device_type = OF_DEVICE_CUDA;
  of_session_t* gpu = NULL;
  of_status_t* st = of_session_create(&options, &gpu);
  if (st != NULL) {
    const int unavailable = of_status_code(st) == OF_STATUS_UNAVAILABLE;
    printf("SKIPPED: %s\n", of_status_message(st));
    of_status_free(st);
    return unavailable ? SKIP : 1;
  }
  of_session_t* cpu = NULL;
  if (!ok(of_session_create(NULL, &cpu))) return 1;

  const int64_t dims[2] = {3, 5};
  float host[15], back[15];
  for (int i = 0; i < 15; ++i) host[i] = (float)i * 0.5f - 3.0f;
  of_tensor_t* t = NULL;
  if (ok(of_tensor_from_data(gpu, of_dtype_float32(), dims, 2, host, sizeof host, NULL, &t))) {
    int32_t type = 0, index = -1;
    EXPECT(ok(of_tensor_device(t, &type, &index)) && type == OF_DEVICE_CUDA && index == 0);
    EXPECT(ok(of_tensor_copy_to_host(t, back, sizeof back)) && memcmp(host, back, sizeof host) == 0);
    of_tensor_release(t);
  }

  of_tensor_t* full = NULL;
  double d[15];
  if (ok(of_tensor_full(gpu, of_dtype_float64(), dims, 2, 2.25, NULL, &full))) {
    EXPECT(ok(of_tensor_copy_to_host(full, d, sizeof d)));
    for (int i = 0; i < 15; ++i) EXPECT(d[i] == 2.25);
    of_tensor_release(full);
  }

  /* The same seed gives the same numbers on either device (counter-based generator). */
  of_tensor_t *rg = NULL, *rc = NULL;
  float a[15], b[15];
  if (ok(of_session_manual_seed(gpu, 7)) && ok(of_session_manual_seed(cpu, 7)) &&
      ok(of_tensor_randn(gpu, of_dtype_float32(), dims, 2, NULL, &rg)) &&
      ok(of_tensor_randn(cpu, of_dtype_float32(), dims, 2, NULL, &rc))) {
    EXPECT(ok(of_tensor_copy_to_host(rg, a, sizeof a)) && ok(of_tensor_copy_to_host(rc, b, sizeof b)));
    EXPECT(memcmp(a, b, sizeof a) == 0);
  }
  of_tensor_release(rg);
  of_tensor_release(rc);

  /* A device index past the last one is UNAVAILABLE, not a crash. */
  of_tensor_options_t topts;
  of_tensor_options_init(&topts);
  topts.device_type = OF_DEVICE_CUDA;
  topts.device_index = 4096;
  of_tensor_t* none = NULL;
  st = of_tensor_zeros(gpu, of_dtype_float32(), dims, 2, &topts, &none);
  EXPECT(of_status_code(st) == OF_STATUS_UNAVAILABLE && none == NULL);
  of_status_free(st);

  of_session_destroy(gpu);
  of_session_destroy(cpu);
  printf("%s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
