// Tensor: an eager tensor — a typed, shaped (strided) view of a Storage on one device.
//
// Tensors are intrusively reference counted: IntrusivePtr<Tensor> in C++, of_tensor_retain/release
// in C, both on the same counter. The shape of an eager tensor is always static. Metadata never
// changes after creation, so concurrent reads of one tensor are safe; writing its data while another
// thread reads it is the caller's race.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/common/dtype.h"
#include "core/common/intrusive_ptr.h"
#include "core/common/shape.h"
#include "core/tensor/storage.h"

namespace oneflow {

class Tensor;
using TensorPtr = IntrusivePtr<Tensor>;

class Tensor final : public RefCounted {
 public:
  // A contiguous tensor over `storage` from byte 0; the storage must hold shape.numel() elements.
  static TensorPtr Make(std::shared_ptr<Storage> storage, Symbol<DType> dtype, Shape shape);

  Symbol<DType> dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t ndim() const { return shape_.ndim(); }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements
  int64_t storage_offset() const { return storage_offset_; }        // in elements
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_->bytes(); }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // First element. Only meaningful on the device that holds it.
  void* raw_data() const {
    return static_cast<char*>(storage_->data()) + storage_offset_ * static_cast<int64_t>(dtype_->bytes());
  }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }

 private:
  Tensor() = default;

  std::shared_ptr<Storage> storage_;
  Symbol<DType> dtype_;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;
};

}  // namespace oneflow
