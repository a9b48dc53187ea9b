// Tensor creation, queries and reference counting.
#include "capi/src/capi_internal.h"
#include "core/tensor/factory.h"

using namespace oneflow;
using capi::Guard;
using capi::Require;
using capi::Unwrap;
using capi::Wrap;

namespace {

// The device a creation call targets: the options' device, else the session's default.
Device TargetDevice(const Session& session, const of_tensor_options_t* options) {
  const of_tensor_options_t o = capi::ReadOptions(options, of_tensor_options_init, "options");
  if (o.device_type == 0) return session.default_device();
  return Device::FromRaw(o.device_type, o.device_index);
}

// The common body of the creation functions that take (session, dtype, dims, ndim, options, out_tensor);
// make(session, dtype, shape, device) makes the tensor.
template <typename Make>
of_status_t* Create(const char* function, of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                    size_t ndim, const of_tensor_options_t* options, of_tensor_t** out_tensor, Make&& make) {
  return Guard(function, [&] {
    Session& s = capi::SessionOf(session);
    const Symbol<DType> dt = Unwrap(dtype);
    const Shape shape = Shape::FromRaw(dims, ndim, "dims");
    CheckStatic(shape, "dims");
    const Device device = TargetDevice(s, options);
    Require(out_tensor, "out_tensor");
    *out_tensor = Wrap(make(s, dt, shape, device));
  });
}

}  // namespace

extern "C" {

void of_tensor_options_init(of_tensor_options_t* options) {
  if (options == nullptr) return;
  *options = of_tensor_options_t{};
  options->struct_size = sizeof(of_tensor_options_t);
}

of_status_t* of_tensor_from_data(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                                 const void* data, size_t nbytes, const of_tensor_options_t* options,
                                 of_tensor_t** out_tensor) {
  return Create(__func__, session, dtype, dims, ndim, options, out_tensor, [&](Session&, auto dt, const Shape& s, Device d) {
    return FromHost(dt, s, data, nbytes, d);
  });
}

of_status_t* of_tensor_adopt_data(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                                  void* data, size_t nbytes, of_deleter_fn deleter, void* user_data,
                                  of_tensor_t** out_tensor) {
  // The deleter must run exactly once whatever happens: it is handed to the storage first thing, and
  // called here if validation fails before that.
  Storage::Deleter del;
  if (deleter != nullptr) del = [deleter, user_data](void* p) { deleter(p, user_data); };
  bool handed_over = false;
  of_status_t* status = Guard(__func__, [&] {
    capi::SessionOf(session);
    Require(out_tensor, "out_tensor");
    const Symbol<DType> dt = Unwrap(dtype);
    const Shape shape = Shape::FromRaw(dims, ndim, "dims");
    CheckStatic(shape, "dims");
    handed_over = true;
    *out_tensor = Wrap(AdoptHost(dt, shape, data, nbytes, std::move(del)));
  });
  if (!handed_over && deleter != nullptr) deleter(data, user_data);
  return status;
}

of_status_t* of_tensor_empty(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                             const of_tensor_options_t* options, of_tensor_t** out_tensor) {
  return Create(__func__, session, dtype, dims, ndim, options, out_tensor,
                [&](Session&, auto dt, const Shape& s, Device d) {
                  return dt->is_bool() ? Full(dt, s, 0.0, d) : Empty(dt, s, d);  // Note [Bool bytes]
                });
}

of_status_t* of_tensor_zeros(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                             const of_tensor_options_t* options, of_tensor_t** out_tensor) {
  return Create(__func__, session, dtype, dims, ndim, options, out_tensor,
                [&](Session&, auto dt, const Shape& s, Device d) { return Full(dt, s, 0.0, d); });
}

of_status_t* of_tensor_ones(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                            const of_tensor_options_t* options, of_tensor_t** out_tensor) {
  return Create(__func__, session, dtype, dims, ndim, options, out_tensor,
                [&](Session&, auto dt, const Shape& s, Device d) { return Full(dt, s, 1.0, d); });
}

of_status_t* of_tensor_full(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                            double value, const of_tensor_options_t* options, of_tensor_t** out_tensor) {
  return Create(__func__, session, dtype, dims, ndim, options, out_tensor,
                [&](Session&, auto dt, const Shape& s, Device d) { return Full(dt, s, value, d); });
}

of_status_t* of_tensor_rand(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                            const of_tensor_options_t* options, of_tensor_t** out_tensor) {
  return Create(__func__, session, dtype, dims, ndim, options, out_tensor,
                [&](Session& s, auto dt, const Shape& shape, Device d) { return Rand(s.generator(), dt, shape, d, &s.thread_pool()); });
}

of_status_t* of_tensor_randn(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims, size_t ndim,
                             const of_tensor_options_t* options, of_tensor_t** out_tensor) {
  return Create(__func__, session, dtype, dims, ndim, options, out_tensor,
                [&](Session& s, auto dt, const Shape& shape, Device d) { return Randn(s.generator(), dt, shape, d, &s.thread_pool()); });
}

of_status_t* of_tensor_arange(of_session_t* session, double start, double end, double step, const of_dtype_t* dtype,
                              const of_tensor_options_t* options, of_tensor_t** out_tensor) {
  return Guard(__func__, [&] {
    const Session& s = capi::SessionOf(session);
    const Symbol<DType> dt = Unwrap(dtype);
    const Device device = TargetDevice(s, options);
    Require(out_tensor, "out_tensor");
    *out_tensor = Wrap(Arange(start, end, step, dt, device));
  });
}

void of_tensor_retain(of_tensor_t* tensor) {
  if (tensor) reinterpret_cast<Tensor*>(tensor)->Retain();
}

void of_tensor_release(of_tensor_t* tensor) {
  if (tensor) reinterpret_cast<Tensor*>(tensor)->Release();
}

of_status_t* of_tensor_dtype(const of_tensor_t* tensor, const of_dtype_t** out_dtype) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    *Require(out_dtype, "out_dtype") = Wrap(t.dtype());
  });
}

of_status_t* of_tensor_ndim(const of_tensor_t* tensor, size_t* out_ndim) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    *Require(out_ndim, "out_ndim") = static_cast<size_t>(t.ndim());
  });
}

of_status_t* of_tensor_dims(const of_tensor_t* tensor, int64_t* out_dims, size_t capacity) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    const auto raw = t.shape().raw();
    if (capacity < raw.size()) {
      OF_THROW(OutOfRange) << "out_dims has room for " << capacity << " dims but the tensor has " << raw.size();
    }
    if (raw.empty()) return;
    Require(out_dims, "out_dims");
    std::copy(raw.begin(), raw.end(), out_dims);
  });
}

of_status_t* of_tensor_numel(const of_tensor_t* tensor, int64_t* out_numel) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    OF_CHECK(t.shape().is_static()) << "the tensor is lazy with shape " << t.shape()
                                    << ": its size is known only when the graph runs";
    *Require(out_numel, "out_numel") = t.numel();
  });
}

of_status_t* of_tensor_nbytes(const of_tensor_t* tensor, size_t* out_nbytes) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    OF_CHECK(t.shape().is_static()) << "the tensor is lazy with shape " << t.shape()
                                    << ": its size is known only when the graph runs";
    *Require(out_nbytes, "out_nbytes") = t.nbytes();
  });
}

of_status_t* of_tensor_is_lazy(const of_tensor_t* tensor, int32_t* out_is_lazy) {
  return Guard(__func__, [&] { *Require(out_is_lazy, "out_is_lazy") = Unwrap(tensor).is_lazy() ? 1 : 0; });
}

of_status_t* of_tensor_device(const of_tensor_t* tensor, int32_t* out_device_type, int32_t* out_device_index) {
  return Guard(__func__, [&] {
    const Device d = Unwrap(tensor).device();
    Require(out_device_type, "out_device_type");
    Require(out_device_index, "out_device_index");
    *out_device_type = static_cast<int32_t>(d.type);
    *out_device_index = d.index;
  });
}

of_status_t* of_tensor_copy_to_host(const of_tensor_t* tensor, void* out_data, size_t nbytes) {
  return Guard(__func__, [&] {
    const Tensor& t = Unwrap(tensor);
    CheckEager(t, "tensor");
    if (nbytes > 0) Require(out_data, "out_data");
    CopyToHost(t, out_data, nbytes);
  });
}

of_status_t* of_tensor_copy_to_device(const of_tensor_t* tensor, int32_t device_type, int32_t device_index,
                                      of_tensor_t** out_tensor) {
  return Guard(__func__, [&] {
    const TensorPtr t = capi::Borrow(tensor, "tensor");
    CheckEager(*t, "tensor");
    const Device device = Device::FromRaw(device_type, device_index);
    Require(out_tensor, "out_tensor");
    *out_tensor = Wrap(CopyToDevice(t, device));
  });
}

}  // extern "C"
