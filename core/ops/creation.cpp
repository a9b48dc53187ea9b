// Scalars and filled tensors: scalar operands become 0-d eager tensors; *_like are ops (one node in a
// graph) because their shape follows another tensor.
#include <cmath>

#include "core/op/dispatch.h"
#include "core/ops/ops.h"
#include "core/ops/register.h"
#include "core/session/session.h"
#include "core/tensor/factory.h"

namespace oneflow {
namespace ops {

TensorPtr ScalarLike(const TensorPtr& like, double value) {
  OF_CHECK(like) << "scalar operand: the tensor is null";
  // Note [Scalar operands]: C has one double where Python has int and float, so being integral plays
  // the part of the scalar's type, and the scalar's dtype follows from the tensor's dtype and that
  // alone, never from the magnitude (PyTorch's rule for Python scalars): the tensor's own dtype when it
  // is floating, or integer with an integral scalar; int64 for an integral scalar with a bool tensor;
  // float32 otherwise. A scalar that dtype cannot hold is refused (PyTorch 2 refuses it too; wrapping
  // int8 + 300 to 44, or widening it to int64, would make the result depend on the value).
  const Symbol<DType> t = like->dtype();
  const bool integral = std::isfinite(value) && std::trunc(value) == value;
  Symbol<DType> dtype = DType::Float32();
  if (t->is_floating_point() || (integral && t->is_integer())) {
    dtype = t;
  } else if (integral && t->is_bool()) {
    dtype = DType::Int64();
  }
  if (!IsRepresentable(value, dtype)) {
    OF_THROW(InvalidArgument) << "scalar " << value << " is out of range for the " << t << " tensor (a scalar takes "
                              << "the dtype " << dtype << " here); cast the tensor to a wider dtype first";
  }
  return Full(dtype, Shape{}, value, like->device());
}

TensorPtr FullLike(const TensorPtr& x, double value) {
  static const OpDef& op = OpRegistry::Global().Get("full_like");
  return Apply1(op, {x}, {{"value", value}});
}
TensorPtr ZerosLike(const TensorPtr& x) { return FullLike(x, 0.0); }
TensorPtr OnesLike(const TensorPtr& x) { return FullLike(x, 1.0); }

}  // namespace ops

namespace {

std::vector<TensorMeta> InferFullLike(std::span<const TensorMeta> in, const Attrs& attrs) {
  CheckRepresentable(attrs.Float("value"), in[0].dtype, "value");
  return {in[0]};
}

void FullLikeKernel(KernelContext& ctx) {
  const Tensor& out = ctx.out(0);
  const double value = ctx.attrs.Float("value");
  VisitDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      v = T(static_cast<float>(value));
    } else {
      v = static_cast<T>(value);
    }
    T* p = out.data<T>();
    std::fill(p, p + out.numel(), v);
  });
}

}  // namespace

void RegisterCreationOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "full_like",
      .inputs = {"x"},
      .outputs = {"y"},
      .attrs = {{"value", 0.0}},
      .infer = InferFullLike,
      .kernels = {{DeviceType::kCPU, kAllTypes, FullLikeKernel}},
      .strided_inputs = true,  // reads only the metadata
  });
}

}  // namespace oneflow
