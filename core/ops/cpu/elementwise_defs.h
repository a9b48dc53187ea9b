// The pieces the elementwise op families share (core/ops/unary.cpp, elementwise.cpp, math_*.cpp):
// unary and backward-op inference, the UnaryBackward frame, the dedicated backward ops' OpDef, the
// broadcast-gradient reduction and the promotions the ops:: functions apply before the registry op.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/op/dispatch.h"
#include "core/ops/cpu/elementwise_loops.h"
#include "core/ops/ops.h"

namespace oneflow::cpu {

// ---- inference ------------------------------------------------------------------------------------
template <Domain kDomain>
std::vector<TensorMeta> InferUnary(std::span<const TensorMeta> in, const Attrs&) {
  CheckDomain(in[0].dtype, kDomain, "x");
  return {in[0]};
}

// (dy, saved) of one floating dtype.
inline std::vector<TensorMeta> InferGrad(std::span<const TensorMeta> in, const Attrs&) {
  OF_CHECK(in[0].dtype == in[1].dtype) << "dy and the saved tensor must have the same dtype, got " << in[0].dtype
                                       << " and " << in[1].dtype;
  CheckDomain(in[0].dtype, Domain::kFloating, "dy");
  return {TensorMeta{in[0].dtype, BroadcastShapes(in[0].shape, in[1].shape), in[0].device}};
}

template <Domain kDomain, bool kBoolOut>
std::vector<TensorMeta> InferBinary(std::span<const TensorMeta> in, const Attrs&) {
  OF_CHECK(in[0].dtype == in[1].dtype) << "a and b must have the same dtype, got " << in[0].dtype << " and "
                                       << in[1].dtype << " (the ops:: functions promote them)";
  CheckDomain(in[0].dtype, kDomain, "a");
  const Symbol<DType> out = kBoolOut ? DType::Bool() : in[0].dtype;
  return {TensorMeta{out, BroadcastShapes(in[0].shape, in[1].shape), in[0].device}};
}

// ---- backward -------------------------------------------------------------------------------------
// For ops whose gradient is one expression of (dy, x, y).
template <TensorPtr (*kGrad)(const TensorPtr& dy, const TensorPtr& x, const TensorPtr& y, const Attrs& attrs)>
std::vector<TensorPtr> UnaryBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  if (!dy || !ctx.needs_input_grad[0]) return {nullptr};
  return {kGrad(dy, ctx.inputs[0], ctx.outputs[0], ctx.attrs)};
}

// The gradient of an operand that was broadcast: g summed back to the operand's shape.
inline TensorPtr SumTo(const TensorPtr& g, const TensorPtr& operand) {
  return g->shape() == operand->shape() ? g : ops::SumToShape(g, operand->shape());
}

// A dedicated backward op (dy, saved) -> dx of the element function F; not differentiable again.
template <typename F>
OpDef GradOp(std::string name, std::string saved, KernelFn kernel = MapKernel<F, 2>) {
  OpDef def = ElementwiseOp(std::move(name), {"dy", std::move(saved)}, InferGrad, nullptr, KernelDTypes<F>(), kernel);
  def.outputs = {"dx"};
  return def;
}

// ---- promotion (the ops:: functions) ---------------------------------------------------------------
// Integer and bool inputs of the transcendental ops compute in float32 (as PyTorch).
inline TensorPtr ToFloating(std::string_view op, const TensorPtr& x) {
  OF_CHECK(x) << op << ": input 'x' is null";
  return x->dtype()->is_floating_point() ? x : ops::Cast(x, DType::Float32());
}

inline void CheckOperands(std::string_view op, const TensorPtr& a, const TensorPtr& b) {
  OF_CHECK(a) << op << ": input 'a' is null";
  OF_CHECK(b) << op << ": input 'b' is null";
}

// Promotes a and b to one dtype (a floating one with `floating`) and applies the registry op.
inline TensorPtr PromotedBinary(const OpDef& op, const TensorPtr& a, const TensorPtr& b, bool floating = false) {
  CheckOperands(op.name, a, b);
  Symbol<DType> dtype = PromoteTypes(a->dtype(), b->dtype());
  if (floating && !dtype->is_floating_point()) dtype = DType::Float32();
  return Apply1(op, {ops::Cast(a, dtype), ops::Cast(b, dtype)});
}

}  // namespace oneflow::cpu
