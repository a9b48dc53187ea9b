// The C ABI of the indexing ops (core/ops/indexing.h): embedding, gather/scatter, masked_fill,
// one_hot, and the layout and sorting ops of the family.
#include "capi/src/op_call.h"
#include "core/ops/indexing.h"

using namespace oneflow;
using capi::Borrow;
using capi::Run;

of_status_t* of_embedding(of_session_t* session, const of_tensor_t* weight, const of_tensor_t* indices,
                          int64_t padding_idx, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::Embedding(Borrow(weight, "weight"), Borrow(indices, "indices"), padding_idx); });
}
