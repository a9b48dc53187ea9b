// Elementwise ops on CUDA: cast between every pair of dtypes (cast.cu), and every op with a fused opcode (add, mul,
// relu, relu_backward, ...) runs as a one-step fused_elementwise program, so the device computes each element function
// in one place (elementwise.cu), for fused programs and single ops alike. Operands broadcast and are read at any
// strides; the output is written at its own (channels-last calls stay channels last).
#include "core/ops/cuda/cuda_kernel.h"

namespace oneflow::cuda {
namespace {

static_assert(kNumFusedOpcodes == 19, "core/ops/cuda/elementwise.cu computes opcodes 0..18: teach it the new ones");

// Whether `t`, of the output's shape, is laid out in the output's row-major order.
bool DenseRowMajor(const Tensor& t, const Shape& out) {
  if (t.shape() != out) return false;
  const std::vector<int64_t> row_major = ContiguousStrides(out);
  for (int64_t d = 0; d < out.ndim(); ++d) {
    if (out[d].value() != 1 && t.strides()[static_cast<size_t>(d)] != row_major[static_cast<size_t>(d)]) return false;
  }
  return true;
}

// An op with a fused opcode: the one-step program {opcode, x0[, x1]}.
void OpcodeKernel(KernelContext& ctx) {
  OF_CHECK_INTERNAL(ctx.op != nullptr && ctx.op->fused_opcode >= 0) << "the CUDA opcode kernel needs its op";
  const auto num_inputs = static_cast<int64_t>(ctx.inputs.size());
  const FusedProgram program{num_inputs,
                             {{static_cast<FusedOpcode>(ctx.op->fused_opcode), 0, num_inputs == 2 ? 1 : -1}}};
  std::vector<ElementwiseOperand> operands;
  for (const TensorPtr& x : ctx.inputs) operands.push_back(OperandOf(*x, ctx.out(0).shape()));
  RunElementwise(ctx.out(0), operands, program, 1.0, OpName(ctx));
}

void FusedElementwiseKernel(KernelContext& ctx) {
  const FusedProgram program = DecodeFusedProgram(ctx.attrs.Ints("program"), static_cast<int64_t>(ctx.inputs.size()));
  std::vector<ElementwiseOperand> operands;
  for (const TensorPtr& x : ctx.inputs) operands.push_back(OperandOf(*x, ctx.out(0).shape()));
  RunElementwise(ctx.out(0), operands, program, 1.0, OpName(ctx));
}

// cast: x and y of one shape, each at its own strides (a channels-last x gives a channels-last y).
void CastKernel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& y = ctx.out(0);
  if (x.ndim() > kMaxDims) OF_THROW(Unimplemented) << "cast: CUDA casts take at most " << kMaxDims << " dims";
  CastArgs a;
  a.ndim = static_cast<int32_t>(x.ndim());
  for (int64_t d = 0; d < x.ndim(); ++d) {
    a.sizes[d] = x.shape()[d].value();
    a.x_strides[d] = x.strides()[static_cast<size_t>(d)];
    a.y_strides[d] = y.strides()[static_cast<size_t>(d)];
  }
  a.numel = x.numel();
  a.x = x.raw_data();
  a.y = y.raw_data();
  LaunchCast(ElementOf(x.dtype()), ElementOf(y.dtype()), a, StreamFor(y.device()));
  CheckLaunch(OpName(ctx), y.device());
}

}  // namespace

ElementwiseOperand OperandOf(const Tensor& t, const Shape& out) {
  ElementwiseOperand operand{t.raw_data(), std::vector<int64_t>(static_cast<size_t>(out.ndim()), 0),
                             DenseRowMajor(t, out)};
  const int64_t lead = out.ndim() - t.ndim();
  for (int64_t d = lead; d < out.ndim(); ++d) {
    if (t.shape()[d - lead].value() != 1)
      operand.strides[static_cast<size_t>(d)] = t.strides()[static_cast<size_t>(d - lead)];
  }
  return operand;
}

void RunElementwise(const Tensor& y, std::span<const ElementwiseOperand> inputs, const FusedProgram& program,
                    double scale, std::string_view what) {
  const Shape& shape = y.shape();
  if (shape.ndim() > kMaxDims || static_cast<int64_t>(inputs.size()) > kMaxOperands ||
      static_cast<int64_t>(program.steps.size()) > kMaxSteps) {
    OF_THROW(Unimplemented) << what << ": the CUDA elementwise kernel takes at most " << kMaxDims << " dims, "
                            << kMaxOperands << " inputs and " << kMaxSteps << " steps, got " << shape.ndim() << ", "
                            << inputs.size() << " and " << program.steps.size();
  }
  ElementwiseArgs args;
  args.ndim = static_cast<int32_t>(shape.ndim());
  for (int64_t d = 0; d < shape.ndim(); ++d) args.sizes[d] = shape[d].value();
  args.numel = y.numel();
  args.num_inputs = static_cast<int32_t>(inputs.size());
  args.num_steps = static_cast<int32_t>(program.steps.size());
  for (size_t s = 0; s < program.steps.size(); ++s) {
    args.step_code[s] = static_cast<int32_t>(program.steps[s].code);
    args.step_a[s] = static_cast<int32_t>(program.steps[s].a);
    args.step_b[s] = static_cast<int32_t>(program.steps[s].b);
  }
  auto set = [&](size_t k, const ElementwiseOperand& operand) {
    args.dense[k] = operand.dense;
    for (int64_t d = 0; d < shape.ndim(); ++d) args.strides[k][d] = operand.strides[static_cast<size_t>(d)];
  };
  set(0, OperandOf(y, shape));
  args.out = y.raw_data();
  for (size_t k = 0; k < inputs.size(); ++k) {
    set(k + 1, inputs[k]);
    args.in[k] = inputs[k].data;
  }
  args.scale = scale;
  LaunchElementwise(ElementOf(y.dtype()), args, StreamFor(y.device()));
  CheckLaunch(what, y.device());
}

void RegisterElementwiseKernels(OpRegistry& registry) {
  for (const OpDef* op : registry.All()) {
    if (op->fused_opcode >= 0) {
      registry.AddKernel(op->name, {DeviceType::kCUDA, kFloatingTypes, OpcodeKernel, /*channels_last=*/true});
    }
  }
  registry.AddKernel("cast", {DeviceType::kCUDA, kAllTypes, CastKernel, /*channels_last=*/true});
  registry.AddKernel("fused_elementwise",
                     {DeviceType::kCUDA, kFloatingTypes, FusedElementwiseKernel, /*channels_last=*/true});
}

}  // namespace oneflow::cuda
