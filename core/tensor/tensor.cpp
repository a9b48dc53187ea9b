#include "core/tensor/tensor.h"

namespace oneflow {

TensorPtr Tensor::Make(std::shared_ptr<Storage> storage, Symbol<DType> dtype, Shape shape) {
  CheckStatic(shape, "tensor shape");
  TensorPtr t(new Tensor());
  t->numel_ = shape.numel();
  OF_CHECK_INTERNAL(static_cast<size_t>(t->numel_) * dtype->bytes() <= storage->nbytes())
      << "storage of " << storage->nbytes() << " bytes is too small for " << dtype << " " << shape;
  t->strides_ = ContiguousStrides(shape);
  t->storage_ = std::move(storage);
  t->dtype_ = dtype;
  t->shape_ = std::move(shape);
  return t;
}

bool Tensor::is_contiguous() const { return strides_ == ContiguousStrides(shape_); }

}  // namespace oneflow
