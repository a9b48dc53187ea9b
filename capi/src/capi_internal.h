// The C boundary's plumbing: status objects, the exception guard, handle conversions.
// Every exported function is `return Guard(__func__, [&] { ... });` or infallible.
#pragma once

#include <algorithm>
#include <memory>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/dtype.h"
#include "core/common/error.h"
#include "core/session/session.h"
#include "core/tensor/tensor.h"
#include "oneflow/oneflow_c.h"

struct of_status_t {
  of_status_code_t code;
  std::string message;
};

// A session handle owns one reference to the session's native state. Graphs hold others, so that
// destroying the handle first leaves every graph working (Note [Any destroy order] in session.h).
struct of_session_t {
  std::shared_ptr<oneflow::Session> impl;
};

// An optimizer handle; shared, because a graph it is attached to keeps it alive (core/graph/graph.h).
namespace oneflow {
class Optimizer;
namespace graph {
class Graph;
}
}  // namespace oneflow
struct of_optimizer_t {
  std::shared_ptr<oneflow::Optimizer> impl;
};

namespace oneflow::capi {

of_status_t* MakeStatus(StatusCode code, std::string message) noexcept;

// Runs fn and turns whatever it throws into a status whose message starts with `function`.
template <typename Fn>
of_status_t* Guard(std::string_view function, Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const Error& e) {
    return MakeStatus(e.code(), std::string(function) + ": " + e.message());
  } catch (const std::bad_alloc&) {
    return MakeStatus(StatusCode::kResourceExhausted, std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return MakeStatus(StatusCode::kInternal, std::string(function) + ": internal error: " + e.what());
  } catch (...) {
    return MakeStatus(StatusCode::kUnknown, std::string(function) + ": unknown exception");
  }
}

// The graph behind a handle (capi/src/graph.cpp); InvalidArgument for NULL.
graph::Graph& GraphOf(const of_graph_t* graph);

// InvalidArgument "argument '<name>' is NULL" unless p is set.
template <typename T>
T* Require(T* p, std::string_view name) {
  if (p == nullptr) OF_THROW(InvalidArgument) << "argument '" << name << "' is NULL";
  return p;
}

// The session behind a handle; InvalidArgument naming `name` for NULL.
inline Session& SessionOf(of_session_t* session, std::string_view name = "session") {
  return *Require(session, name)->impl;
}

// An int32_t boolean of the ABI: 0 or 1, InvalidArgument naming `name` otherwise.
inline bool Flag(int32_t value, std::string_view name) {
  if (value != 0 && value != 1) OF_THROW(InvalidArgument) << "argument '" << name << "' must be 0 or 1, got " << value;
  return value == 1;
}

// Reads a caller's options struct: fields beyond the caller's struct_size keep their defaults, so a
// caller built against an older header (a smaller struct) stays valid. NULL means all defaults.
template <typename T>
T ReadOptions(const T* given, void (*init)(T*), std::string_view name) {
  T opts;
  init(&opts);
  if (given == nullptr) return opts;
  OF_CHECK(given->struct_size >= sizeof(size_t))
      << name << "->struct_size is " << given->struct_size << "; initialise the struct with its _init function";
  std::memcpy(static_cast<void*>(&opts), given, std::min(given->struct_size, sizeof(T)));
  opts.struct_size = sizeof(T);
  return opts;
}

// Writes a stats struct for a caller whose struct may be older (smaller): the first `out->struct_size`
// bytes of `full`, which must be at least the size field (INVALID_ARGUMENT naming `name` otherwise).
template <typename T>
void WriteStats(T* out, T full, std::string_view name) {
  Require(out, name);
  OF_CHECK(out->struct_size >= sizeof(size_t))
      << name << "->struct_size is " << out->struct_size << "; set it to the struct's sizeof";
  full.struct_size = out->struct_size;
  std::memcpy(static_cast<void*>(out), &full, std::min(out->struct_size, sizeof(T)));
}

inline const of_dtype_t* Wrap(Symbol<DType> d) { return reinterpret_cast<const of_dtype_t*>(d.get()); }
inline Symbol<DType> Unwrap(const of_dtype_t* d, std::string_view name = "dtype") {
  return Symbol<DType>::FromInterned(reinterpret_cast<const DType*>(Require(d, name)));
}

// A tensor handle is the Tensor itself; the caller's reference is one count on its refcount.
inline of_tensor_t* Wrap(TensorPtr t) { return reinterpret_cast<of_tensor_t*>(t.Detach()); }
inline const Tensor& Unwrap(const of_tensor_t* t, std::string_view name = "tensor") {
  return *reinterpret_cast<const Tensor*>(Require(t, name));
}

// A borrowed input handle as the TensorPtr the engine takes (one more reference for the call's length).
inline TensorPtr Borrow(const of_tensor_t* t, std::string_view name) {
  return TensorPtr(const_cast<Tensor*>(&Unwrap(t, name)));
}
// A (pointer, count) array of handles; each must be set and is named "<name>[i]" in errors.
template <typename Handle>
std::vector<TensorPtr> BorrowList(Handle const* handles, size_t n, std::string_view name) {
  if (n > 0) Require(handles, name);
  std::vector<TensorPtr> list;
  list.reserve(n);
  for (size_t i = 0; i < n; ++i) list.push_back(Borrow(handles[i], fmt::format("{}[{}]", name, i)));
  return list;
}

}  // namespace oneflow::capi
