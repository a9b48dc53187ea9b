// Tensor: an eager tensor — a typed, shaped (strided) view of a Storage on one device.
//
// Tensors are intrusively reference counted: IntrusivePtr<Tensor> in C++, of_tensor_retain/release
// in C, both on the same counter. The shape of an eager tensor is always static. Shape, strides and
// dtype never change after creation, so concurrent reads of one tensor are safe; writing its data, or
// its autograd state (requires_grad, grad), while another thread uses it is the caller's race.
//
// Autograd state: a tensor made by a differentiable op from inputs that require grad has a grad_fn
// (the node that computes its inputs' gradients) and is a non-leaf; every other tensor is a leaf.
// Only leaves can be marked requires_grad by the user, and only leaves accumulate .grad.
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
class GradNode;  // core/autograd/autograd.h

class Tensor final : public RefCounted {
 public:
  // A contiguous tensor over `storage` from byte 0; the storage must hold shape.numel() elements.
  static TensorPtr Make(std::shared_ptr<Storage> storage, Symbol<DType> dtype, Shape shape);
  // A view sharing `base`'s storage with its own shape, strides and offset (in elements); the caller
  // guarantees every element it addresses lies inside the storage. No autograd state is carried.
  static TensorPtr MakeView(const Tensor& base, Shape shape, std::vector<int64_t> strides, int64_t storage_offset);
  // The same data and metadata without autograd state (a new leaf that does not require grad).
  TensorPtr Detach() const;

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

  // --- autograd ---
  bool requires_grad() const { return requires_grad_; }
  // Leaves only, floating dtypes only (InvalidArgument otherwise).
  void set_requires_grad(bool requires_grad);
  bool is_leaf() const { return grad_fn_ == nullptr; }
  // The accumulated gradient of a leaf (null until a backward reaches it).
  const TensorPtr& grad() const { return grad_; }
  void set_grad(TensorPtr grad) { grad_ = std::move(grad); }
  const std::shared_ptr<GradNode>& grad_fn() const { return grad_fn_; }
  int32_t output_nr() const { return output_nr_; }  // which output of grad_fn this tensor is
  // Makes this tensor output `output_nr` of `node` (used by op dispatch when it records autograd).
  void SetGradFn(std::shared_ptr<GradNode> node, int32_t output_nr);

 private:
  Tensor() = default;

  std::shared_ptr<Storage> storage_;
  Symbol<DType> dtype_;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;

  bool requires_grad_ = false;
  TensorPtr grad_;
  std::shared_ptr<GradNode> grad_fn_;
  int32_t output_nr_ = 0;
};

}  // namespace oneflow
