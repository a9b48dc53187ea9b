#include "core/graph/passes/passes.h"

#include <cstring>

#include "core/op/layout.h"

namespace oneflow::graph {
namespace {

// The memory format of a view op's output: the view made of a stand-in for its input laid out as
// planned, as eager execution makes it of the real input. A view reads no data, except where it cannot
// view and copies instead (reshape or flatten merging dims that channels last keeps apart), so a stand-in
// laid out other than contiguously has bytes of its own (zeroed: they are read, and thrown away).
MemoryFormat ViewFormat(const OpDef& op, const TensorMeta& in, const TensorMeta& out, const Attrs& attrs) {
  static const TensorPtr holder = Tensor::Make(Storage::Allocate(Device::CPU(), 1), DType::Float32(), Shape{0});
  TensorPtr base = holder;
  if (in.format != MemoryFormat::kContiguous) {
    const size_t nbytes = static_cast<size_t>(in.shape.numel()) * DType::Float32()->bytes();
    std::shared_ptr<Storage> storage = Storage::Allocate(Device::CPU(), nbytes);
    if (nbytes > 0) std::memset(storage->data(), 0, nbytes);
    base = Tensor::Make(std::move(storage), DType::Float32(), Shape{in.shape.numel()});
  }
  const TensorPtr stand_in = Tensor::MakeView(*base, in.shape, StridesFor(in.shape, in.format), 0);
  return op.view(stand_in, out, attrs)->memory_format();
}

}  // namespace

void SelectKernels(Ir& ir) {
  for (IrNode& n : ir.nodes) {
    if (!n.alive) continue;
    const std::vector<TensorMeta> in = ir.InputMetas(n);
    if (n.op->view != nullptr) {
      TensorMeta& out = ir.meta(n.outputs[0]);
      out.format = ViewFormat(*n.op, in[0], out, n.attrs);
      continue;
    }
    const TensorMeta& first = !in.empty() && n.inputs[0] >= 0 ? in[0] : ir.meta(n.outputs[0]);
    const Symbol<DType> key = in.empty() ? ir.meta(n.outputs[0]).dtype : in[static_cast<size_t>(n.op->dtype_input)].dtype;
    n.kernel = n.op->FindKernel(first.device.type, key);
    if (n.kernel == nullptr) {
      OF_THROW(Unimplemented) << n.op->name << ": no kernel for dtype " << key << " on " << first.device;
    }
    n.layout = CallLayout(*n.op, *n.kernel, in, n.attrs);
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      TensorMeta& m = ir.meta(n.outputs[j]);
      m.format = OutputFormat(*n.op, j, m.shape, n.layout);
    }
  }
}

}  // namespace oneflow::graph
