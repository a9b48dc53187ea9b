/* Links liboneflow_c, checks that header and library agree, and makes one tensor. */
#include <stdio.h>

#include <oneflow/oneflow_c.h>

int main(void) {
  if (of_abi_version() != OF_ABI_VERSION) {
    fprintf(stderr, "header ABI %d, library ABI %d\n", OF_ABI_VERSION, of_abi_version());
    return 1;
  }
  of_session_t* session = NULL;
  of_tensor_t* ones = NULL;
  const int64_t dims[2] = {2, 3};
  of_status_t* st = of_session_create(NULL, &session);
  if (st == NULL) st = of_tensor_ones(session, of_dtype_float32(), dims, 2, NULL, &ones);
  float out[6] = {0};
  if (st == NULL) st = of_tensor_copy_to_host(ones, out, sizeof out);
  if (st != NULL) {
    fprintf(stderr, "error: %s\n", of_status_message(st));
    of_status_destroy(st);
    return 1;
  }
  of_tensor_release(ones);
  of_session_destroy(session);
  printf("oneflow_c %s: sum of ones(2, 3) = %g\n", of_version_string(),
         out[0] + out[1] + out[2] + out[3] + out[4] + out[5]);
  return out[5] == 1.0f ? 0 : 1;
}
