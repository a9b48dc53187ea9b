// DLPack exchange: tensors exported as DLPack managed tensors that share their memory, and DLPack
// managed tensors imported as tensors over theirs (oneflow_c.h, "DLPack exchange").
#include <fmt/ranges.h>

#include "capi/src/capi_internal.h"
#include "core/tensor/factory.h"
#include "oneflow/dlpack.h"

using namespace oneflow;
using capi::Guard;
using capi::Require;

namespace {

// What an exported managed tensor owns: a reference to the tensor (so its memory outlives the
// tensor's handles) and the shape and strides arrays DLTensor points to. manager_ctx points here.
template <typename Managed>
struct Export {
  Managed managed{};
  TensorPtr tensor;
  std::vector<int64_t> shape, strides;

  static void Delete(Managed* self) { delete static_cast<Export*>(self->manager_ctx); }
};

template <typename Managed>
Managed* MakeExport(const of_tensor_t* handle) {
  TensorPtr t = capi::Borrow(handle, "tensor");
  CheckEager(*t, "tensor");
  // The kernels writing it may still be queued (Note [One stream per CUDA device]); the consumer's stream
  // is not known, so wait for them.
  if (t->device().type != DeviceType::kCPU) GetBackend(t->device()).Synchronize();
  auto e = std::make_unique<Export<Managed>>();
  for (int64_t d = 0; d < t->ndim(); ++d) e->shape.push_back(t->shape()[d].value());
  e->strides = t->strides();
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = t->storage()->data() == nullptr ? nullptr : t->raw_data();  // the first element; byte_offset 0
  dl.device = DLDevice{static_cast<DLDeviceType>(t->device().type), t->device().index};
  dl.ndim = static_cast<int32_t>(t->ndim());
  const DLPackDataType code = t->dtype()->dlpack();
  dl.dtype = DLDataType{code.code, code.bits, code.lanes};
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->tensor = std::move(t);
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &Export<Managed>::Delete;
  return &e.release()->managed;
}

// The dtype of a DLPack element type, with the reason when there is none.
Symbol<DType> ImportedDType(const DLDataType& dt) {
  if (dt.lanes != 1) {
    OF_THROW(InvalidArgument) << "dl_tensor.dtype has " << dt.lanes << " lanes: vector element types are not supported";
  }
  if (dt.code == kDLComplex) {
    OF_THROW(InvalidArgument) << "dl_tensor.dtype is complex" << int{dt.bits} << ": oneflow_c has no complex dtype";
  }
  try {
    return DType::FromDLPack(DLPackDataType{dt.code, dt.bits, dt.lanes});
  } catch (const Error& e) {
    OF_THROW(InvalidArgument) << "dl_tensor.dtype {code " << int{dt.code} << ", bits " << int{dt.bits}
                              << ", lanes 1} is none of oneflow_c's dtypes";
  }
}

// The body of both imports: `managed`'s deleter runs exactly once, whatever happens: before returning
// on failure, else when the tensor's storage dies.
template <typename Managed>
of_status_t* Import(const char* function, Managed* managed, of_tensor_t** out_tensor) {
  bool handed_over = false;
  of_status_t* status = Guard(function, [&] {
    Require(managed, "managed");
    Require(out_tensor, "out_tensor");
    bool read_only = false;
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
      OF_CHECK(managed->version.major == DLPACK_MAJOR_VERSION)
          << "managed has DLPack version " << managed->version.major << "." << managed->version.minor
          << "; only major version " << DLPACK_MAJOR_VERSION << " is supported";
      read_only = (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    }
    const DLTensor& dl = managed->dl_tensor;
    const int32_t device_type = dl.device.device_type;
    if (device_type == kDLCUDA || device_type == kDLCUDAManaged) {
      OF_THROW(Unimplemented) << "dl_tensor.device is CUDA (device_type " << device_type
                              << "): importing CUDA memory waits for the CUDA backend's kernels";
    }
    OF_CHECK(device_type == kDLCPU) << "dl_tensor.device has device_type " << device_type
                                    << "; oneflow_c imports CPU memory (kDLCPU = 1)";
    const Symbol<DType> dtype = ImportedDType(dl.dtype);
    OF_CHECK(dl.ndim >= 0) << "dl_tensor.ndim is " << dl.ndim;
    if (dl.ndim > 0) Require(dl.shape, "dl_tensor.shape");
    const Shape shape = Shape::FromRaw(dl.shape, static_cast<size_t>(dl.ndim), "dl_tensor.shape");
    CheckStatic(shape, "dl_tensor.shape");
    const std::vector<int64_t> strides =
        dl.strides != nullptr ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim) : ContiguousStrides(shape);
    OF_CHECK(dl.data != nullptr || dl.byte_offset == 0)
        << "dl_tensor.data is NULL with byte_offset " << dl.byte_offset;
    void* first = static_cast<char*>(dl.data) + dl.byte_offset;
    Storage::Deleter deleter;
    if (managed->deleter != nullptr) deleter = [managed](void*) { managed->deleter(managed); };
    handed_over = true;  // from here AdoptStridedHost runs the deleter exactly once
    *out_tensor = capi::Wrap(AdoptStridedHost(dtype, shape, strides, first, std::move(deleter), read_only));
  });
  if (!handed_over && managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  return status;
}

}  // namespace

extern "C" {

of_status_t* of_tensor_to_dlpack(const of_tensor_t* tensor, DLManagedTensorVersioned** out_managed) {
  return Guard(__func__, [&] {
    Require(out_managed, "out_managed");
    DLManagedTensorVersioned* m = MakeExport<DLManagedTensorVersioned>(tensor);
    m->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    m->flags = capi::Unwrap(tensor).storage()->read_only() ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    *out_managed = m;
  });
}

of_status_t* of_tensor_to_dlpack_legacy(const of_tensor_t* tensor, DLManagedTensor** out_managed) {
  return Guard(__func__, [&] {
    Require(out_managed, "out_managed");
    const Tensor& t = capi::Unwrap(tensor);
    if (!t.is_lazy() && t.storage()->read_only()) {
      OF_THROW(FailedPrecondition) << "tensor is read-only (a DLPack import marked READ_ONLY), which the legacy "
                                   << "DLManagedTensor cannot say; export it with of_tensor_to_dlpack";
    }
    *out_managed = MakeExport<DLManagedTensor>(tensor);
  });
}

of_status_t* of_tensor_from_dlpack(DLManagedTensorVersioned* managed, of_tensor_t** out_tensor) {
  return Import(__func__, managed, out_tensor);
}

of_status_t* of_tensor_from_dlpack_legacy(DLManagedTensor* managed, of_tensor_t** out_tensor) {
  return Import(__func__, managed, out_tensor);
}

}  // extern "C"
