// The C ABI of the indexing ops (core/ops/indexing.h): embedding, gather/scatter, masked_fill,
// one_hot, and the layout and sorting ops of the family.
#include "capi/src/op_call.h"
#include "core/ops/indexing.h"

using namespace oneflow;
using capi::Borrow;
using capi::Flag;
using capi::Ints;
using capi::Run;
using capi::RunMulti;

of_status_t* of_embedding(of_session_t* session, const of_tensor_t* weight, const of_tensor_t* indices,
                          int64_t padding_idx, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::Embedding(Borrow(weight, "weight"), Borrow(indices, "indices"), padding_idx); });
}

of_status_t* of_gather(of_session_t* session, const of_tensor_t* x, int64_t dim, const of_tensor_t* index,
                       of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Gather(Borrow(x, "x"), dim, Borrow(index, "index")); });
}

of_status_t* of_index_select(of_session_t* session, const of_tensor_t* x, int64_t dim, const of_tensor_t* index,
                             of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::IndexSelect(Borrow(x, "x"), dim, Borrow(index, "index")); });
}

of_status_t* of_scatter(of_session_t* session, const of_tensor_t* x, int64_t dim, const of_tensor_t* index,
                        const of_tensor_t* src, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::Scatter(Borrow(x, "x"), dim, Borrow(index, "index"), Borrow(src, "src")); });
}

of_status_t* of_scatter_add(of_session_t* session, const of_tensor_t* x, int64_t dim, const of_tensor_t* index,
                            const of_tensor_t* src, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::ScatterAdd(Borrow(x, "x"), dim, Borrow(index, "index"), Borrow(src, "src")); });
}

of_status_t* of_masked_fill(of_session_t* session, const of_tensor_t* x, const of_tensor_t* mask, double value,
                            of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::MaskedFill(Borrow(x, "x"), Borrow(mask, "mask"), value); });
}

of_status_t* of_one_hot(of_session_t* session, const of_tensor_t* indices, int64_t num_classes,
                        of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::OneHot(Borrow(indices, "indices"), num_classes); });
}

of_status_t* of_nonzero(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Nonzero(Borrow(x, "x")); });
}

// ---- layout ----------------------------------------------------------------------------------------

of_status_t* of_tril(of_session_t* session, const of_tensor_t* x, int64_t diagonal, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Tril(Borrow(x, "x"), diagonal); });
}

of_status_t* of_triu(of_session_t* session, const of_tensor_t* x, int64_t diagonal, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Triu(Borrow(x, "x"), diagonal); });
}

of_status_t* of_flip(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                     of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Flip(Borrow(x, "x"), Ints(dims, ndims, "dims")); });
}

of_status_t* of_roll(of_session_t* session, const of_tensor_t* x, const int64_t* shifts, size_t nshifts,
                     const int64_t* dims, size_t ndims, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    return ops::Roll(Borrow(x, "x"), Ints(shifts, nshifts, "shifts"), Ints(dims, ndims, "dims"));
  });
}

of_status_t* of_repeat(of_session_t* session, const of_tensor_t* x, const int64_t* repeats, size_t nrepeats,
                       of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor,
             [&] { return ops::Repeat(Borrow(x, "x"), Ints(repeats, nrepeats, "repeats")); });
}

of_status_t* of_slice(of_session_t* session, const of_tensor_t* x, int64_t dim, int64_t start, int64_t end,
                      int64_t step, of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Slice(Borrow(x, "x"), dim, start, end, step); });
}

// ---- ordering --------------------------------------------------------------------------------------

of_status_t* of_argmin(of_session_t* session, const of_tensor_t* x, int64_t dim, of_bool_t keepdim,
                       of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] { return ops::Argmin(Borrow(x, "x"), dim, Flag(keepdim, "keepdim")); });
}

of_status_t* of_topk(of_session_t* session, const of_tensor_t* x, int64_t k, int64_t dim, of_bool_t largest,
                     of_bool_t sorted, of_tensor_t** out_values, of_tensor_t** out_indices) {
  return RunMulti<2>(__func__, session, {out_values, out_indices}, {"out_values", "out_indices"}, [&] {
    ops::SortResult r = ops::Topk(Borrow(x, "x"), k, dim, Flag(largest, "largest"), Flag(sorted, "sorted"));
    return std::array<TensorPtr, 2>{std::move(r.values), std::move(r.indices)};
  });
}

of_status_t* of_sort(of_session_t* session, const of_tensor_t* x, int64_t dim, of_bool_t descending,
                     of_tensor_t** out_values, of_tensor_t** out_indices) {
  return RunMulti<2>(__func__, session, {out_values, out_indices}, {"out_values", "out_indices"}, [&] {
    ops::SortResult r = ops::Sort(Borrow(x, "x"), dim, Flag(descending, "descending"));
    return std::array<TensorPtr, 2>{std::move(r.values), std::move(r.indices)};
  });
}
