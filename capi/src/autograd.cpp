// The C ABI of eager autograd: a tensor's requires_grad, leaf state and grad, detach, backward and the
// calling thread's grad mode (core/autograd/autograd.h).
#include "capi/src/capi_internal.h"
#include "core/autograd/autograd.h"
#include "core/op/autocast.h"

using namespace oneflow;
using capi::Flag;
using capi::Guard;
using capi::Require;
using capi::Unwrap;
using capi::Wrap;

namespace {

// The autograd state of a tensor is mutable through a handle the caller owns.
Tensor& Mutable(of_tensor_t* t, std::string_view name = "tensor") {
  return *reinterpret_cast<Tensor*>(Require(t, name));
}

}  // namespace

extern "C" {

of_status_t* of_tensor_set_requires_grad(of_tensor_t* tensor, int32_t requires_grad) {
  return Guard(__func__, [&] {
    Tensor& t = Mutable(tensor);
    t.set_requires_grad(Flag(requires_grad, "requires_grad"));
  });
}

of_status_t* of_tensor_requires_grad(const of_tensor_t* tensor, int32_t* out_requires_grad) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    *Require(out_requires_grad, "out_requires_grad") = t.requires_grad() ? 1 : 0;
  });
}

of_status_t* of_tensor_is_leaf(const of_tensor_t* tensor, int32_t* out_is_leaf) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    *Require(out_is_leaf, "out_is_leaf") = t.is_leaf() ? 1 : 0;
  });
}

of_status_t* of_tensor_grad(const of_tensor_t* tensor, of_tensor_t** out_grad) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    Require(out_grad, "out_grad");
    *out_grad = t.grad() ? Wrap(t.grad()) : nullptr;
  });
}

of_status_t* of_tensor_set_grad(of_tensor_t* tensor, const of_tensor_t* grad) {
  return Guard(__func__, [&] {
    Tensor& t = Mutable(tensor);
    if (grad == nullptr) {
      t.set_grad(nullptr);
      return;
    }
    const Tensor& g = Unwrap(grad, "grad");
    CheckEager(t, "tensor");
    CheckEager(g, "grad");  // a lazy grad has no data: a later optimizer step could not read it
    if (g.shape() != t.shape() || g.dtype() != t.dtype() || g.device() != t.device()) {
      OF_THROW(InvalidArgument) << "grad is " << g.dtype() << " " << g.shape() << " on " << g.device()
                                << " but the tensor is " << t.dtype() << " " << t.shape() << " on "
                                << t.device() << "; a gradient must match its tensor's shape, dtype and device";
    }
    // Detached: the tensor must not own grad's autograd state (grad could even be the tensor itself,
    // and a grad that holds its owner would be a reference cycle).
    t.set_grad(g.Detach());
  });
}

of_status_t* of_tensor_detach(const of_tensor_t* tensor, of_tensor_t** out_tensor) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    Require(out_tensor, "out_tensor");
    *out_tensor = Wrap(t.Detach());
  });
}

of_status_t* of_tensor_backward(of_session_t* session, of_tensor_t* tensor, const of_tensor_t* grad,
                                int32_t retain_graph) {
  return Guard(__func__, [&] {
    TensorPtr root(&Mutable(tensor));
    TensorPtr g = grad == nullptr ? TensorPtr() : TensorPtr(const_cast<Tensor*>(&Unwrap(grad, "grad")));
    const bool retain = Flag(retain_graph, "retain_graph");
    SessionScope scope(capi::SessionOf(session));
    Backward({root}, {g}, retain);
  });
}

of_status_t* of_grad_set_enabled(int32_t enabled, int32_t* out_previous) {
  return Guard(__func__, [&] {
    const bool on = Flag(enabled, "enabled");
    const bool previous = GradMode::is_enabled();
    GradMode::set_enabled(on);
    if (out_previous != nullptr) *out_previous = previous ? 1 : 0;
  });
}

of_status_t* of_grad_is_enabled(int32_t* out_enabled) {
  return Guard(__func__, [&] { *Require(out_enabled, "out_enabled") = GradMode::is_enabled() ? 1 : 0; });
}

of_status_t* of_autocast_set(const of_dtype_t* dtype, const of_dtype_t** out_previous) {
  return Guard(__func__, [&] {
    const Symbol<DType> previous = Autocast::dtype();
    Autocast::set_dtype(dtype == nullptr ? Symbol<DType>{} : Unwrap(dtype));
    if (out_previous != nullptr) *out_previous = Wrap(previous);
  });
}

of_status_t* of_autocast_get(const of_dtype_t** out_dtype) {
  return Guard(__func__, [&] { *Require(out_dtype, "out_dtype") = Wrap(Autocast::dtype()); });
}

}  // extern "C"
