// The C ABI of the attention ops (core/ops/attention.h).
#include "capi/src/op_call.h"
#include "core/ops/attention.h"

using namespace oneflow;
using capi::Borrow;
using capi::Flag;
using capi::Optional;
using capi::ReadOptions;
using capi::Run;

extern "C" {

void of_attention_options_init(of_attention_options_t* options) {
  if (options == nullptr) return;
  *options = of_attention_options_t{};
  options->struct_size = sizeof(of_attention_options_t);
}

of_status_t* of_scaled_dot_product_attention(of_session_t* session, const of_tensor_t* q, const of_tensor_t* k,
                                             const of_tensor_t* v, const of_tensor_t* attn_mask,
                                             const of_attention_options_t* options, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_attention_options_t o = ReadOptions(options, of_attention_options_init, "options");
    const ops::AttentionOptions opts{.dropout_p = o.dropout_p, .is_causal = Flag(o.is_causal, "options->is_causal"),
                                     .scale = o.scale};
    return ops::ScaledDotProductAttention(Borrow(q, "q"), Borrow(k, "k"), Borrow(v, "v"),
                                          Optional(attn_mask, "attn_mask"), opts);
  });
}

}  // extern "C"
