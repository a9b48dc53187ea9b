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

_Static_assert(offsetof(of_conv2d_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_conv2d_options_t, stride) == 8, "conv2d options layout");
_Static_assert(offsetof(of_conv2d_options_t, padding) == 24, "conv2d options layout");
_Static_assert(offsetof(of_conv2d_options_t, dilation) == 40, "conv2d options layout");
_Static_assert(offsetof(of_conv2d_options_t, groups) == 56, "conv2d options layout");
_Static_assert(offsetof(of_conv2d_options_t, padding_end) == 64, "conv2d options layout");
_Static_assert(sizeof(of_conv2d_options_t) == 80, "conv2d options size");

_Static_assert(offsetof(of_batch_norm_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_batch_norm_options_t, training) == 8, "batch norm options layout");
_Static_assert(offsetof(of_batch_norm_options_t, momentum) == 16, "batch norm options layout");
_Static_assert(offsetof(of_batch_norm_options_t, eps) == 24, "batch norm options layout");
_Static_assert(sizeof(of_batch_norm_options_t) == 32, "batch norm options size");

_Static_assert(offsetof(of_pool2d_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_pool2d_options_t, kernel_size) == 8, "pool2d options layout");
_Static_assert(offsetof(of_pool2d_options_t, stride) == 24, "pool2d options layout");
_Static_assert(offsetof(of_pool2d_options_t, padding) == 40, "pool2d options layout");
_Static_assert(offsetof(of_pool2d_options_t, dilation) == 56, "pool2d options layout");
_Static_assert(offsetof(of_pool2d_options_t, ceil_mode) == 72, "pool2d options layout");
_Static_assert(offsetof(of_pool2d_options_t, count_include_pad) == 76, "pool2d options layout");
_Static_assert(offsetof(of_pool2d_options_t, padding_end) == 80, "pool2d options layout");
_Static_assert(sizeof(of_pool2d_options_t) == 96, "pool2d options size");

_Static_assert(offsetof(of_conv_transpose2d_options_t, stride) == 8, "conv_transpose2d options layout");
_Static_assert(offsetof(of_conv_transpose2d_options_t, padding) == 24, "conv_transpose2d options layout");
_Static_assert(offsetof(of_conv_transpose2d_options_t, output_padding) == 40, "conv_transpose2d options layout");
_Static_assert(offsetof(of_conv_transpose2d_options_t, dilation) == 56, "conv_transpose2d options layout");
_Static_assert(offsetof(of_conv_transpose2d_options_t, groups) == 72, "conv_transpose2d options layout");
_Static_assert(sizeof(of_conv_transpose2d_options_t) == 80, "conv_transpose2d options size");
_Static_assert(offsetof(of_conv1d_options_t, stride) == 8, "conv1d options layout");
_Static_assert(offsetof(of_conv1d_options_t, padding) == 16, "conv1d options layout");
_Static_assert(offsetof(of_conv1d_options_t, dilation) == 24, "conv1d options layout");
_Static_assert(offsetof(of_conv1d_options_t, groups) == 32, "conv1d options layout");
_Static_assert(sizeof(of_conv1d_options_t) == 40, "conv1d options size");
_Static_assert(offsetof(of_conv_transpose1d_options_t, stride) == 8, "conv_transpose1d options layout");
_Static_assert(offsetof(of_conv_transpose1d_options_t, padding) == 16, "conv_transpose1d options layout");
_Static_assert(offsetof(of_conv_transpose1d_options_t, output_padding) == 24, "conv_transpose1d options layout");
_Static_assert(offsetof(of_conv_transpose1d_options_t, dilation) == 32, "conv_transpose1d options layout");
_Static_assert(offsetof(of_conv_transpose1d_options_t, groups) == 40, "conv_transpose1d options layout");
_Static_assert(sizeof(of_conv_transpose1d_options_t) == 48, "conv_transpose1d options size");
_Static_assert(offsetof(of_conv3d_options_t, stride) == 8, "conv3d options layout");
_Static_assert(offsetof(of_conv3d_options_t, padding) == 32, "conv3d options layout");
_Static_assert(offsetof(of_conv3d_options_t, dilation) == 56, "conv3d options layout");
_Static_assert(offsetof(of_conv3d_options_t, groups) == 80, "conv3d options layout");
_Static_assert(sizeof(of_conv3d_options_t) == 88, "conv3d options size");
_Static_assert(offsetof(of_pad_options_t, mode) == 8, "pad options layout");
_Static_assert(offsetof(of_pad_options_t, value) == 16, "pad options layout");
_Static_assert(sizeof(of_pad_options_t) == 24, "pad options size");
_Static_assert(offsetof(of_interpolate_options_t, mode) == 8, "interpolate options layout");
_Static_assert(offsetof(of_interpolate_options_t, align_corners) == 12, "interpolate options layout");
_Static_assert(offsetof(of_interpolate_options_t, scale_factor) == 16, "interpolate options layout");
_Static_assert(sizeof(of_interpolate_options_t) == 40, "interpolate options size");

_Static_assert(offsetof(of_loss_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_loss_options_t, reduction) == 8, "loss options layout");
_Static_assert(offsetof(of_loss_options_t, ignore_index) == 16, "loss options layout");
_Static_assert(offsetof(of_loss_options_t, label_smoothing) == 24, "loss options layout");
_Static_assert(sizeof(of_loss_options_t) == 32, "loss options size");
_Static_assert(OF_REDUCTION_NONE == 0 && OF_REDUCTION_MEAN == 1 && OF_REDUCTION_SUM == 2,
               "reductions are append-only");

_Static_assert(offsetof(of_attention_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_attention_options_t, dropout_p) == 8, "attention options layout");
_Static_assert(offsetof(of_attention_options_t, is_causal) == 16, "attention options layout");
_Static_assert(offsetof(of_attention_options_t, scale) == 24, "attention options layout");
_Static_assert(sizeof(of_attention_options_t) == 32, "attention options size");

_Static_assert(offsetof(of_graph_options_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_graph_options_t, fuse) == 8, "graph options layout");
_Static_assert(offsetof(of_graph_options_t, inplace) == 12, "graph options layout");
_Static_assert(offsetof(of_graph_options_t, plan_memory) == 16, "graph options layout");
_Static_assert(offsetof(of_graph_options_t, plan_cache_size) == 20, "graph options layout");
_Static_assert(offsetof(of_graph_options_t, profile) == 24, "graph options layout");
_Static_assert(sizeof(of_graph_options_t) == 32, "graph options size");

_Static_assert(offsetof(of_graph_memory_stats_t, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(of_graph_memory_stats_t, planned_peak_bytes) == 8, "graph memory stats layout");
_Static_assert(offsetof(of_graph_memory_stats_t, intermediate_bytes) == 16, "graph memory stats layout");
_Static_assert(offsetof(of_graph_memory_stats_t, buffer_count) == 24, "graph memory stats layout");
_Static_assert(offsetof(of_graph_memory_stats_t, inplace_count) == 32, "graph memory stats layout");
_Static_assert(offsetof(of_graph_memory_stats_t, node_count) == 40, "graph memory stats layout");
_Static_assert(offsetof(of_graph_memory_stats_t, specialization_count) == 48, "graph memory stats layout");
_Static_assert(offsetof(of_graph_memory_stats_t, compile_count) == 56, "graph memory stats layout");
_Static_assert(offsetof(of_graph_memory_stats_t, cached_plan_bytes) == 64, "graph memory stats layout");
_Static_assert(sizeof(of_graph_memory_stats_t) == 72, "graph memory stats size");

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

static of_status_t* (*const check_graph_run)(of_graph_t*, const of_tensor_t* const*, size_t, of_tensor_t**,
                                             size_t) = of_graph_run;

int main(void) { return check_create == NULL || check_from_data == NULL || check_graph_run == NULL; }
