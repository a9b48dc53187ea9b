// The C ABI of the reductions and scans of core/ops/reductions.h.
#include "capi/src/op_call.h"
#include "core/ops/reductions.h"

using namespace oneflow;
using capi::Borrow;
using capi::Flag;
using capi::Ints;
using capi::Run;

extern "C" {

#define OF_REDUCE_OP(name, Fn)                                                                                 \
  of_status_t* of_##name(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,        \
                         of_bool_t keepdim, of_tensor_t** out_tensor) {                                         \
    return Run(__func__, session, out_tensor,                                                                   \
               [&] { return ops::Fn(Borrow(x, "x"), Ints(dims, ndims, "dims"), Flag(keepdim, "keepdim")); }); \
  }

OF_REDUCE_OP(prod, Prod)
OF_REDUCE_OP(logsumexp, LogSumExp)
OF_REDUCE_OP(all, All)
OF_REDUCE_OP(any, Any)

#undef OF_REDUCE_OP

of_status_t* of_norm(of_session_t* session, const of_tensor_t* x, double p, const int64_t* dims, size_t ndims,
                     of_bool_t keepdim, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::Norm(Borrow(x, "x"), p, Ints(dims, ndims, "dims"), Flag(keepdim, "keepdim"));
  });
}

of_status_t* of_cumsum(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Cumsum(Borrow(x, "x"), dim); });
}

of_status_t* of_cumprod(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Cumprod(Borrow(x, "x"), dim); });
}

}  // extern "C"
