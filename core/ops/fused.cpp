// fused_elementwise (see fused.h) and the registration of the fused ops (fused_conv_bn_act is in
// dnnl/fused_conv.cpp).
//
// The kernel runs the program over blocks of the output (kBlock elements), blocks split over the
// session's thread pool. Within a block each instruction is one tight loop over the block (unit-stride
// or splat operands, compiled per opcode), so GCC vectorises it; temporaries live in per-chunk block
// buffers, assigned by liveness so that a long chain needs only a few. Values computed from one-element
// inputs only are computed once per call, not per element. The last instruction writes the output.
#include "core/ops/cpu/in_float32.h"
#include "core/ops/fused.h"

#include "core/op/layout.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/op/dispatch.h"
#include "core/ops/cpu/elementwise_loops.h"
#include "core/ops/register.h"

namespace oneflow {

void RegisterFusedConvOps(OpRegistry& registry);  // core/ops/dnnl/fused_conv.cpp

namespace {

struct OpcodeInfo {
  const char* name;
  int arity;
  int64_t cost;  // per element, in cheap arithmetic operations (sets the parallel grain)
};
// Indexed by FusedOpcode.
constexpr OpcodeInfo kOpcodes[kNumFusedOpcodes] = {
    {"add", 2, 1},           {"sub", 2, 1},     {"mul", 2, 1},     {"div", 2, 1},
    {"maximum", 2, 1},       {"minimum", 2, 1}, {"neg", 1, 1},     {"abs", 1, 1},
    {"relu", 1, 1},          {"exp", 1, 8},     {"log", 1, 8},     {"sqrt", 1, 2},
    {"rsqrt", 1, 2},         {"sigmoid", 1, 8}, {"tanh", 1, 8},    {"relu_backward", 2, 1},
    {"sigmoid_backward", 2, 1}, {"tanh_backward", 2, 1}, {"pow", 2, 8},
};

const OpcodeInfo& Info(FusedOpcode code) {
  const auto c = static_cast<int64_t>(code);
  OF_CHECK(c >= 0 && c < kNumFusedOpcodes) << "unknown fused opcode " << c;
  return kOpcodes[static_cast<size_t>(c)];
}

using Step = FusedStep;
using Decoded = FusedProgram;

std::string InputRegisters(int64_t num_inputs) {
  return num_inputs == 1 ? "register 0 is the input" : fmt::format("registers 0..{} are the inputs", num_inputs - 1);
}

}  // namespace

Decoded DecodeFusedProgram(const std::vector<int64_t>& program, int64_t num_inputs) {
  OF_CHECK(!program.empty()) << "program is empty; it needs at least one instruction {opcode, dst, a, b}";
  OF_CHECK(program.size() % 4 == 0) << "program has " << program.size()
                                    << " values, not a multiple of 4 (each instruction is {opcode, dst, a, b})";
  Decoded d{num_inputs, {}};
  const size_t count = program.size() / 4;
  d.steps.reserve(count);
  std::unordered_map<int64_t, int64_t> defined;  // temporary register -> the value it holds now
  for (size_t i = 0; i < count; ++i) {
    const int64_t* ins = program.data() + 4 * i;
    OF_CHECK(ins[0] >= 0 && ins[0] < kNumFusedOpcodes)
        << "instruction " << i << " has unknown opcode " << ins[0] << " (opcodes are 0.." << kNumFusedOpcodes - 1
        << ")";
    const auto code = static_cast<FusedOpcode>(ins[0]);
    const OpcodeInfo& info = Info(code);
    auto read = [&](int64_t reg, const char* operand) {
      if (reg >= 0 && reg < num_inputs) return reg;
      const auto it = defined.find(reg);
      OF_CHECK(it != defined.end()) << "instruction " << i << " (" << info.name << ") reads register " << reg
                                    << " as " << operand << " before any instruction defines it ("
                                    << InputRegisters(num_inputs) << ")";
      return it->second;
    };
    OF_CHECK(ins[1] >= num_inputs) << "instruction " << i << " (" << info.name << ") writes register " << ins[1]
                                   << ", which is not a temporary (" << InputRegisters(num_inputs)
                                   << "; temporaries start at " << num_inputs << ")";
    Step step{code, read(ins[2], "a"), -1};
    if (info.arity == 1) {
      OF_CHECK(ins[3] == -1) << "instruction " << i << " (" << info.name << ") is unary, so b must be -1, got "
                             << ins[3];
    } else {
      OF_CHECK(ins[3] != -1) << "instruction " << i << " (" << info.name << ") is binary but b is -1";
      step.b = read(ins[3], "b");
    }
    d.steps.push_back(step);
    defined[ins[1]] = num_inputs + static_cast<int64_t>(i);
  }
  return d;
}

namespace {

// ---- element loops --------------------------------------------------------------------------------
// Element functions are the registered ops' own expressions (core/ops/elementwise.cpp, unary.cpp), so
// that results are bit-identical to running the ops one by one.

template <typename T>
struct Operand {
  const T* p;
  bool splat;  // p[0] stands for every element
};

template <typename T, typename F>
inline void Map1(T* __restrict d, Operand<T> a, int64_t n, F f) {
  if (a.splat) {
    std::fill_n(d, n, f(a.p[0]));
    return;
  }
  const T* __restrict x = a.p;
  for (int64_t k = 0; k < n; ++k) d[k] = f(x[k]);
}

template <typename T, typename F>
inline void Map2(T* __restrict d, Operand<T> a, Operand<T> b, int64_t n, F f) {
  if (!a.splat && !b.splat) {
    const T* __restrict x = a.p;
    const T* __restrict y = b.p;
    for (int64_t k = 0; k < n; ++k) d[k] = f(x[k], y[k]);
  } else if (!a.splat) {
    const T* __restrict x = a.p;
    const T y = b.p[0];
    for (int64_t k = 0; k < n; ++k) d[k] = f(x[k], y);
  } else if (!b.splat) {
    const T x = a.p[0];
    const T* __restrict y = b.p;
    for (int64_t k = 0; k < n; ++k) d[k] = f(x, y[k]);
  } else {
    std::fill_n(d, n, f(a.p[0], b.p[0]));
  }
}

// d[0, n) = code(a, b). d never aliases a or b.
template <typename T>
void RunStep(FusedOpcode code, T* d, Operand<T> a, Operand<T> b, int64_t n) {
  switch (code) {
    case FusedOpcode::kAdd: return Map2(d, a, b, n, [](T x, T y) { return x + y; });
    case FusedOpcode::kSub: return Map2(d, a, b, n, [](T x, T y) { return x - y; });
    case FusedOpcode::kMul: return Map2(d, a, b, n, [](T x, T y) { return x * y; });
    case FusedOpcode::kDiv: return Map2(d, a, b, n, [](T x, T y) { return x / y; });
    // NaN wins (x != x: NaN), as maximum / minimum.
    case FusedOpcode::kMaximum: return Map2(d, a, b, n, [](T x, T y) { return (x != x || x > y) ? x : y; });
    case FusedOpcode::kMinimum: return Map2(d, a, b, n, [](T x, T y) { return (x != x || x < y) ? x : y; });
    case FusedOpcode::kNeg: return Map1(d, a, n, [](T x) { return -x; });
    case FusedOpcode::kAbs: return Map1(d, a, n, [](T x) { return std::abs(x); });
    case FusedOpcode::kRelu: return Map1(d, a, n, [](T x) { return x < T(0) ? T(0) : x; });
    case FusedOpcode::kExp: return Map1(d, a, n, [](T x) { return std::exp(x); });
    case FusedOpcode::kLog: return Map1(d, a, n, [](T x) { return std::log(x); });
    case FusedOpcode::kSqrt: return Map1(d, a, n, [](T x) { return std::sqrt(x); });
    case FusedOpcode::kRsqrt: return Map1(d, a, n, [](T x) { return T(1) / std::sqrt(x); });
    case FusedOpcode::kSigmoid: return Map1(d, a, n, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
    case FusedOpcode::kTanh: return Map1(d, a, n, [](T x) { return std::tanh(x); });
    case FusedOpcode::kReluBackward: return Map2(d, a, b, n, [](T dy, T y) { return y > T(0) ? dy : T(0); });
    case FusedOpcode::kSigmoidBackward: return Map2(d, a, b, n, [](T dy, T y) { return dy * y * (T(1) - y); });
    case FusedOpcode::kTanhBackward: return Map2(d, a, b, n, [](T dy, T y) { return dy * (T(1) - y * y); });
    case FusedOpcode::kPow:
      // As the pow kernel: a one-element exponent of 2 squares.
      if (b.splat && b.p[0] == T(2)) return Map1(d, a, n, [](T x) { return x * x; });
      return Map2(d, a, b, n, [](T x, T y) { return std::pow(x, y); });
  }
  OF_THROW(Internal) << "fused_elementwise: opcode " << static_cast<int64_t>(code) << " has no loop";
}

// ---- the kernel -----------------------------------------------------------------------------------
constexpr int64_t kBlock = 512;  // elements per block: a few temporaries stay in L1

// Where a value is during a block.
enum class Where { kInput, kScalar, kSlot, kOutput };
struct Loc {
  Where where = Where::kScalar;
  int64_t index = 0;  // input, value (kScalar) or slot
};
struct BlockStep {
  FusedOpcode code;
  Loc dst, a, b;
};

template <typename T>
void FusedElementwiseKernel(KernelContext& ctx) {
  const Decoded prog = DecodeFusedProgram(ctx.attrs.Ints("program"), static_cast<int64_t>(ctx.inputs.size()));
  const Tensor& out = ctx.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t num_inputs = prog.num_inputs;
  const int64_t num_values = num_inputs + static_cast<int64_t>(prog.steps.size());
  const int64_t result = num_values - 1;

  // One-element values (scalar inputs and what is computed from them alone) are computed here, once.
  std::vector<bool> scalar(static_cast<size_t>(num_values));
  std::vector<T> value(static_cast<size_t>(num_values));
  for (int64_t i = 0; i < num_inputs; ++i) {
    const Tensor& x = ctx.in(static_cast<size_t>(i));
    OF_CHECK(x.numel() == 1 || x.numel() == n)
        << "x[" << i << "] has shape " << x.shape() << " but the output has shape " << out.shape()
        << "; each input must have the output's shape or exactly one element";
    scalar[static_cast<size_t>(i)] = x.numel() == 1;
    if (x.numel() == 1) value[static_cast<size_t>(i)] = x.data<T>()[0];
  }
  // Only steps that the result depends on run.
  std::vector<bool> live(static_cast<size_t>(num_values), false);
  live[static_cast<size_t>(result)] = true;
  for (int64_t s = static_cast<int64_t>(prog.steps.size()); s-- > 0;) {
    if (!live[static_cast<size_t>(num_inputs + s)]) continue;
    const Step& st = prog.steps[static_cast<size_t>(s)];
    live[static_cast<size_t>(st.a)] = true;
    if (st.b >= 0) live[static_cast<size_t>(st.b)] = true;
  }
  std::vector<size_t> vector_steps;  // steps that run per block
  for (size_t s = 0; s < prog.steps.size(); ++s) {
    const int64_t v = num_inputs + static_cast<int64_t>(s);
    if (!live[static_cast<size_t>(v)]) continue;
    const Step& st = prog.steps[s];
    const bool sc = scalar[static_cast<size_t>(st.a)] && (st.b < 0 || scalar[static_cast<size_t>(st.b)]);
    scalar[static_cast<size_t>(v)] = sc;
    if (sc) {
      const Operand<T> a{&value[static_cast<size_t>(st.a)], true};
      const Operand<T> b{st.b >= 0 ? &value[static_cast<size_t>(st.b)] : nullptr, true};
      RunStep<T>(st.code, &value[static_cast<size_t>(v)], a, b, 1);
    } else {
      vector_steps.push_back(s);
    }
  }
  T* const y = out.data<T>();
  if (scalar[static_cast<size_t>(result)]) {  // the result reads only one-element inputs
    std::fill_n(y, n, value[static_cast<size_t>(result)]);
    return;
  }

  // Block buffers ("slots") for the vector temporaries, by liveness: a slot is free again after the
  // last step that reads it (and only then, so that a step's output never aliases its operands).
  std::vector<int64_t> last_read(static_cast<size_t>(num_values), -1);
  for (size_t k = 0; k < vector_steps.size(); ++k) {
    const Step& st = prog.steps[vector_steps[k]];
    last_read[static_cast<size_t>(st.a)] = static_cast<int64_t>(k);
    if (st.b >= 0) last_read[static_cast<size_t>(st.b)] = static_cast<int64_t>(k);
  }
  std::vector<Loc> loc(static_cast<size_t>(num_values));
  for (int64_t v = 0; v < num_values; ++v) {
    if (scalar[static_cast<size_t>(v)]) loc[static_cast<size_t>(v)] = {Where::kScalar, v};
    else if (v < num_inputs) loc[static_cast<size_t>(v)] = {Where::kInput, v};
  }
  std::vector<int64_t> free_slots;
  int64_t num_slots = 0;
  std::vector<BlockStep> plan;
  int64_t cost = 0;
  for (size_t k = 0; k < vector_steps.size(); ++k) {
    const Step& st = prog.steps[vector_steps[k]];
    const int64_t v = num_inputs + static_cast<int64_t>(vector_steps[k]);
    Loc& dst = loc[static_cast<size_t>(v)];
    if (v == result) {
      dst = {Where::kOutput, 0};
    } else if (!free_slots.empty()) {
      dst = {Where::kSlot, free_slots.back()};
      free_slots.pop_back();
    } else {
      dst = {Where::kSlot, num_slots++};
    }
    plan.push_back({st.code, dst, loc[static_cast<size_t>(st.a)], st.b >= 0 ? loc[static_cast<size_t>(st.b)] : Loc{}});
    cost += Info(st.code).cost;
    for (int64_t operand : {st.a, st.b}) {
      if (operand < 0 || last_read[static_cast<size_t>(operand)] != static_cast<int64_t>(k)) continue;
      const Loc& l = loc[static_cast<size_t>(operand)];
      if (l.where == Where::kSlot && !(operand == st.b && st.a == st.b)) free_slots.push_back(l.index);
    }
  }

  std::vector<const T*> inputs(static_cast<size_t>(num_inputs));
  for (int64_t i = 0; i < num_inputs; ++i) inputs[static_cast<size_t>(i)] = ctx.in(static_cast<size_t>(i)).data<T>();
  auto chunk = [&](int64_t begin, int64_t end) {
    std::vector<T> slots(static_cast<size_t>(num_slots * kBlock));
    for (int64_t start = begin; start < end; start += kBlock) {
      const int64_t len = std::min(kBlock, end - start);
      auto operand = [&](const Loc& l) -> Operand<T> {
        switch (l.where) {
          case Where::kInput: return {inputs[static_cast<size_t>(l.index)] + start, false};
          case Where::kScalar: return {&value[static_cast<size_t>(l.index)], true};
          case Where::kSlot: return {slots.data() + l.index * kBlock, false};
          case Where::kOutput: break;
        }
        return {nullptr, true};  // unused (b of a unary step)
      };
      for (const BlockStep& st : plan) {
        T* d = st.dst.where == Where::kOutput ? y + start : slots.data() + st.dst.index * kBlock;
        RunStep<T>(st.code, d, operand(st.a), operand(st.b), len);
      }
    }
  };
  // As the elementwise ops' grain (cpu::kSimpleGrain for one cheap op), divided by the program's cost.
  const int64_t grain = std::max(kBlock, cpu::kSimpleGrain / std::max<int64_t>(1, cost));
  if (n <= grain) {
    chunk(0, n);
  } else {
    ctx.pool.ParallelFor(n, grain, chunk);
  }
}

void FusedElementwiseKernelAny(KernelContext& ctx) {
  const Symbol<DType> dtype = ctx.in(0).dtype();
  if (dtype == DType::Float32()) {
    FusedElementwiseKernel<float>(ctx);
  } else if (dtype == DType::Float64()) {
    FusedElementwiseKernel<double>(ctx);
  } else {
    OF_THROW(Internal) << "fused_elementwise kernel compiled without dtype " << dtype;
  }
}

// One element, known: a scalar input (any rank).
bool IsOneElement(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](Dim d) { return d.is_known() && d.value() == 1; });
}

std::vector<TensorMeta> InferFusedElementwise(std::span<const TensorMeta> in, const Attrs& attrs) {
  for (size_t i = 1; i < in.size(); ++i) {
    OF_CHECK(in[i].dtype == in[0].dtype) << "x[" << i << "] is " << in[i].dtype << " but x[0] is " << in[0].dtype
                                         << "; the inputs must have one dtype";
  }
  OF_CHECK(in[0].dtype->is_floating_point()) << "the inputs must have a floating dtype, got " << in[0].dtype;
  DecodeFusedProgram(attrs.Ints("program"), static_cast<int64_t>(in.size()));
  const TensorMeta* full = nullptr;  // the first input that is not one element
  size_t full_index = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (IsOneElement(in[i].shape)) continue;
    if (full == nullptr) {
      full = &in[i];
      full_index = i;
    } else {
      OF_CHECK(in[i].shape == full->shape)
          << "x[" << i << "] has shape " << in[i].shape << " but x[" << full_index << "] has shape " << full->shape
          << "; each input must have the output's shape or exactly one element";
    }
  }
  return {TensorMeta{in[0].dtype, full != nullptr ? full->shape : in[0].shape, in[0].device}};
}

}  // namespace

std::optional<FusedOpcode> FusedOpcodeForOp(std::string_view op_name) {
  const OpDef* op = OpRegistry::Global().Find(op_name);
  if (op == nullptr || op->fused_opcode < 0) return std::nullopt;
  return static_cast<FusedOpcode>(op->fused_opcode);
}

int FusedOpcodeArity(FusedOpcode code) { return Info(code).arity; }

const char* FusedOpcodeName(FusedOpcode code) { return Info(code).name; }

void RegisterFusedOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "fused_elementwise",
      .inputs = {"x"},
      .variadic_inputs = true,
      .outputs = {"y"},
      .attrs = {{"program", std::vector<int64_t>{}, /*required=*/true}},
      .infer = InferFusedElementwise,
      // The kernel runs one flat loop: every input that is not one element has the output's format.
      .kernels = CpuKernels(kFloatingTypes, FusedElementwiseKernelAny, /*channels_last=*/true),
      .layout = LayoutOfInputs,
      .layout_inputs = {0},
      .layout_outputs = {0},
      .elementwise = true,
  });
  RegisterFusedConvOps(registry);
}

namespace ops {
TensorPtr FusedElementwise(std::vector<TensorPtr> inputs, std::vector<int64_t> program) {
  static const OpDef& op = OpRegistry::Global().Get("fused_elementwise");
  return Apply1(op, std::move(inputs), {{"program", std::move(program)}});
}
}  // namespace ops

}  // namespace oneflow
