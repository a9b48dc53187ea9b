// The C ABI of the recurrent cells (core/ops/recurrent.h).
#include "capi/src/op_call.h"
#include "core/ops/recurrent.h"

using namespace oneflow;
using capi::Borrow;
using capi::Optional;
using capi::Run;
using capi::RunMulti;

extern "C" {

of_status_t* of_lstm_cell(of_session_t* session, const of_tensor_t* x, const of_tensor_t* h, const of_tensor_t* c,
                          const of_tensor_t* w_ih, const of_tensor_t* w_hh, const of_tensor_t* b_ih,
                          const of_tensor_t* b_hh, of_tensor_t** out_h, of_tensor_t** out_c) {
  return RunMulti<2>(__func__, session, {out_h, out_c}, {"out_h", "out_c"}, [&] {
    auto [hn, cn] = ops::LstmCell(Borrow(x, "x"), Borrow(h, "h"), Borrow(c, "c"), Borrow(w_ih, "w_ih"),
                                  Borrow(w_hh, "w_hh"), Optional(b_ih, "b_ih"), Optional(b_hh, "b_hh"));
    return std::array<TensorPtr, 2>{std::move(hn), std::move(cn)};
  });
}

of_status_t* of_gru_cell(of_session_t* session, const of_tensor_t* x, const of_tensor_t* h, const of_tensor_t* w_ih,
                         const of_tensor_t* w_hh, const of_tensor_t* b_ih, const of_tensor_t* b_hh,
                         of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::GruCell(Borrow(x, "x"), Borrow(h, "h"), Borrow(w_ih, "w_ih"), Borrow(w_hh, "w_hh"),
                        Optional(b_ih, "b_ih"), Optional(b_hh, "b_hh"));
  });
}

}  // extern "C"
