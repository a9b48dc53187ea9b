/* The public header as strict C11 (-std=c11 -pedantic-errors -Werror), with its layout frozen:
 * options structs and enum values are ABI, so a change here must be an append (see CHANGELOG). */
#include <stddef.h>

#include "oneflow/oneflow_c.h"

_Static_assert(sizeof(int64_t) == 8, "dims are int64_t");
_Static_assert(OF_DIM_UNKNOWN == INT64_MIN, "OF_DIM_UNKNOWN is INT64_MIN");

_Static_assert(offsetof(of_session_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_session_options_t, seed) == 8, "session options layout");
_Static_assert(offsetof(of_session_options_t, num_threads) == 16, "session options layout");
_Static_assert(offsetof(of_session_options_t, device_type) == 20, "session options layout");
_Static_assert(offsetof(of_session_options_t, device_index) == 24, "session options layout");
_Static_assert(sizeof(of_session_options_t) == 32, "session options size");

_Static_assert(offsetof(of_tensor_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_tensor_options_t, device_type) == 8, "tensor options layout");
_Static_assert(offsetof(of_tensor_options_t, device_index) == 12, "tensor options layout");
_Static_assert(sizeof(of_tensor_options_t) == 16, "tensor options size");

_Static_assert(OF_STATUS_OK == 0 && OF_STATUS_INVALID_ARGUMENT == 3 && OF_STATUS_NOT_FOUND == 5 &&
                   OF_STATUS_RESOURCE_EXHAUSTED == 8 && OF_STATUS_OUT_OF_RANGE == 11 &&
                   OF_STATUS_INTERNAL == 13 && OF_STATUS_UNAVAILABLE == 14 && OF_STATUS_DATA_LOSS == 15,
               "status codes are append-only");
_Static_assert(OF_DTYPE_INVALID == 0 && OF_DTYPE_BOOL == 1 && OF_DTYPE_INT8 == 2 && OF_DTYPE_UINT8 == 3 &&
                   OF_DTYPE_INT16 == 4 && OF_DTYPE_INT32 == 5 && OF_DTYPE_INT64 == 6 && OF_DTYPE_FLOAT16 == 7 &&
                   OF_DTYPE_BFLOAT16 == 8 && OF_DTYPE_FLOAT32 == 9 && OF_DTYPE_FLOAT64 == 10,
               "dtype codes are append-only");
_Static_assert(OF_DEVICE_CPU == 1 && OF_DEVICE_CUDA == 2, "device types are DLPack's");

/* Function types are part of the ABI too: taking their addresses checks the prototypes. */
static of_status_t* (*const check_create)(const of_session_options_t*, of_session_t**) = of_session_create;
static of_status_t* (*const check_from_data)(of_session_t*, const of_dtype_t*, const int64_t*, size_t, const void*,
                                             size_t, const of_tensor_options_t*, of_tensor_t**) = of_tensor_from_data;

int main(void) { return check_create == NULL || check_from_data == NULL; }
