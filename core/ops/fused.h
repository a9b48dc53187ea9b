// Fused ops, produced only by the graph compiler's fusion pass (core/graph/compile.cpp), which runs after
// autodiff: they have no backward.
//
// "fused_elementwise": inputs x[0..n) (1 or more, one floating dtype), output y, attribute "program": a
// straight-line program of instructions {opcode, dst, a, b} (4 int64 each). Registers 0..n-1 hold the
// inputs, higher ones temporaries; b is -1 for unary opcodes; the result is the last instruction's dst.
// Operands are in the registered op's input order (relu_backward: a = dy, b = y), so the fusion pass maps
// a node's inputs to a and b as they are. Every input has the output's shape or exactly one element (a
// scalar of any rank, splat); the output has the shape of the non-scalar inputs (the first input's shape
// when all are scalars). Each opcode computes exactly what the op of the same name computes.
//
// "fused_conv_bn_act": relu?(batch_norm_inference(conv2d(x, weight, bias))), with the batch norm folded
// into the convolution's weights and bias on every call (the running stats are variables that may
// change between runs). Inputs x, weight, bias?, bn_weight?, bn_bias?, running_mean, running_var; the
// conv2d attributes (stride, padding, dilation, groups), eps (1e-5) and relu (false).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/op/op_registry.h"
#include "core/ops/ops.h"

namespace oneflow {

// The values are what programs hold (and graph dumps print): append only.
enum class FusedOpcode : int64_t {
  kAdd = 0,
  kSub = 1,
  kMul = 2,
  kDiv = 3,
  kMaximum = 4,
  kMinimum = 5,
  kNeg = 6,
  kAbs = 7,
  kRelu = 8,
  kExp = 9,
  kLog = 10,
  kSqrt = 11,
  kRsqrt = 12,
  kSigmoid = 13,
  kTanh = 14,
  kReluBackward = 15,     // (dy, y) -> y > 0 ? dy : 0
  kSigmoidBackward = 16,  // (dy, y) -> dy * y * (1 - y)
  kTanhBackward = 17,     // (dy, y) -> dy * (1 - y * y)
  kPow = 18,              // as "pow": a one-element exponent equal to 2 squares (a * a)
};
inline constexpr int64_t kNumFusedOpcodes = 19;

// `def` declaring that fused_elementwise computes it with `code` (OpDef::fused_opcode), for the op's
// registration.
inline OpDef Fusable(OpDef def, FusedOpcode code) {
  def.fused_opcode = static_cast<int64_t>(code);
  return def;
}
// The opcode that a registered op (by name) declares; nullopt for every other op (including ops with
// attributes, such as gelu).
std::optional<FusedOpcode> FusedOpcodeForOp(std::string_view op_name);
// 1 or 2 operands.
int FusedOpcodeArity(FusedOpcode code);
// The registered op's name ("add", "relu_backward").
const char* FusedOpcodeName(FusedOpcode code);

// A fused_elementwise program decoded: programs may reuse registers, so instructions become values: value
// v < num_inputs is input v, value num_inputs + i is the result of step i.
struct FusedStep {
  FusedOpcode code;
  int64_t a, b;  // values; b = -1 for unary opcodes
};
struct FusedProgram {
  int64_t num_inputs;
  std::vector<FusedStep> steps;  // the result is the last step's value
};
// Validates `program` for `num_inputs` inputs (InvalidArgument naming the instruction otherwise).
FusedProgram DecodeFusedProgram(const std::vector<int64_t>& program, int64_t num_inputs);

namespace ops {

// fused_elementwise over `inputs` (see above).
TensorPtr FusedElementwise(std::vector<TensorPtr> inputs, std::vector<int64_t> program);

// fused_conv_bn_act: bias, bn_weight and bn_bias may be null (no conv bias, gamma = 1, beta = 0).
TensorPtr FusedConvBnAct(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const TensorPtr& bn_weight,
                         const TensorPtr& bn_bias, const TensorPtr& running_mean, const TensorPtr& running_var,
                         const Conv2dOptions& options = {}, double eps = 1e-5, bool relu = false);

}  // namespace ops
}  // namespace oneflow
