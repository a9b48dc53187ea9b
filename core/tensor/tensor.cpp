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

TensorPtr Tensor::MakeView(const Tensor& base, Shape shape, std::vector<int64_t> strides, int64_t storage_offset) {
  OF_CHECK_INTERNAL(static_cast<int64_t>(strides.size()) == shape.ndim()) << "view rank mismatch";
  TensorPtr t(new Tensor());
  t->numel_ = shape.numel();
  t->storage_ = base.storage_;
  t->dtype_ = base.dtype_;
  t->shape_ = std::move(shape);
  t->strides_ = std::move(strides);
  t->storage_offset_ = storage_offset;
  return t;
}

TensorPtr Tensor::Detach() const { return MakeView(*this, shape_, strides_, storage_offset_); }

bool Tensor::is_contiguous() const {
  // Size-1 dims may have any stride; empty tensors are contiguous.
  if (numel_ == 0) return true;
  int64_t expected = 1;
  for (int64_t i = ndim() - 1; i >= 0; --i) {
    const int64_t size = shape_[i].value();
    if (size != 1 && strides_[static_cast<size_t>(i)] != expected) return false;
    expected *= size;
  }
  return true;
}

void Tensor::set_requires_grad(bool requires_grad) {
  OF_CHECK(is_leaf()) << "requires_grad can only be changed on a leaf tensor; this tensor was computed by an op "
                         "(use detach() to get a leaf)";
  OF_CHECK(!requires_grad || dtype_->is_floating_point())
      << "only floating-point tensors can require gradients, got " << dtype_;
  requires_grad_ = requires_grad;
}

void Tensor::SetGradFn(std::shared_ptr<GradNode> node, int32_t output_nr) {
  grad_fn_ = std::move(node);
  output_nr_ = output_nr;
  requires_grad_ = true;
}

}  // namespace oneflow
