// The C ABI of the normalization ops (core/ops/normalization.h).
#include "capi/src/op_call.h"
#include "core/ops/normalization.h"

using namespace oneflow;
using capi::Borrow;
using capi::Ints;
using capi::Optional;
using capi::Run;

extern "C" {

of_status_t* of_layer_norm(of_session_t* session, const of_tensor_t* x, const int64_t* normalized_shape, size_t ndims,
                           const of_tensor_t* weight, const of_tensor_t* bias, double eps, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::LayerNorm(Borrow(x, "x"), Ints(normalized_shape, ndims, "normalized_shape"), Optional(weight, "weight"),
                          Optional(bias, "bias"), eps);
  });
}

of_status_t* of_group_norm(of_session_t* session, const of_tensor_t* x, int64_t num_groups, const of_tensor_t* weight,
                           const of_tensor_t* bias, double eps, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::GroupNorm(Borrow(x, "x"), num_groups, Optional(weight, "weight"), Optional(bias, "bias"), eps);
  });
}

of_status_t* of_instance_norm(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                              const of_tensor_t* bias, double eps, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::InstanceNorm(Borrow(x, "x"), Optional(weight, "weight"), Optional(bias, "bias"), eps);
  });
}

}  // extern "C"
