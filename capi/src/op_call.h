// What every op function of the C ABI shares (capi/src/ops*.cpp): the call's frame (session scope,
// error mapping, the new reference handed out) and the readers of its optional and array arguments.
// Attribute checks belong to the ops themselves (they serve the lazy graph too); only what is
// particular to the C encoding (NULL pointers, of_bool_t flags, enum values) is checked here.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "capi/src/capi_internal.h"

namespace oneflow::capi {

// An input that may be NULL (bias, running statistics).
inline TensorPtr Optional(const of_tensor_t* t, std::string_view name) {
  return t == nullptr ? TensorPtr() : Borrow(t, name);
}

// A (pointer, count) array of int64_t; the pointer may be NULL only when the count is 0.
inline std::vector<int64_t> Ints(const int64_t* values, size_t n, std::string_view name) {
  if (n == 0) return {};
  Require(values, name);
  return {values, values + n};
}

// The common body of every op function: checks session and out_tensor, runs `op` in the session's
// scope and hands its result to the caller as a new reference.
template <typename Op>
of_status_t* Run(const char* function, of_session_t* session, of_tensor_t** out_tensor, Op&& op) {
  return Guard(function, [&] {
    Session& s = SessionOf(session);
    Require(out_tensor, "out_tensor");
    SessionScope scope(s);
    TensorPtr result = op();
    *out_tensor = Wrap(std::move(result));
  });
}

// The same for ops with several results (values and indices): `op` returns them in the order of
// `outs`, each of which must be non-NULL; on failure none is written.
template <size_t N, typename Op>
of_status_t* RunMulti(const char* function, of_session_t* session, const std::array<of_tensor_t**, N>& outs,
                      const std::array<std::string_view, N>& names, Op&& op) {
  return Guard(function, [&] {
    Session& s = SessionOf(session);
    for (size_t i = 0; i < N; ++i) Require(outs[i], names[i]);
    SessionScope scope(s);
    std::array<TensorPtr, N> results = op();
    for (size_t i = 0; i < N; ++i) *outs[i] = Wrap(std::move(results[i]));
  });
}

}  // namespace oneflow::capi
