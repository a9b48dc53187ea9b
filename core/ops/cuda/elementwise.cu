// fused_elementwise programs on the device, and through them every op with a fused opcode (add, relu,
// relu_backward, ...: register.cpp makes each a one-step program). One thread per output element reads its
// operands through their strides, runs the steps in registers and writes the result.
#include "core/ops/cuda/index.cuh"
#include "core/ops/cuda/launch.h"
#include "core/ops/cuda/numeric.cuh"

namespace oneflow::cuda {
namespace {

// FusedOpcode's values (core/ops/fused.h; register.cpp checks that the count still matches).
enum Opcode : int32_t {
  kAdd = 0,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  kMinimum,
  kNeg,
  kAbs,
  kRelu,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kSigmoid,
  kTanh,
  kReluBackward,
  kSigmoidBackward,
  kTanhBackward,
  kPow
};

// Each opcode computes what the CPU's loop computes (core/ops/fused.cpp), in C.
template <typename C>
__device__ inline C Apply(int32_t code, C a, C b) {
  switch (code) {
    case kAdd:
      return a + b;
    case kSub:
      return a - b;
    case kMul:
      return a * b;
    case kDiv:
      return a / b;
    case kMaximum:
      return (a != a || a > b) ? a : b;  // NaN wins
    case kMinimum:
      return (a != a || a < b) ? a : b;
    case kNeg:
      return -a;
    case kAbs:
      return fabs(a);
    case kRelu:
      return a < C(0) ? C(0) : a;
    case kExp:
      return exp(a);
    case kLog:
      return log(a);
    case kSqrt:
      return sqrt(a);
    case kRsqrt:
      return C(1) / sqrt(a);
    case kSigmoid:
      return C(1) / (C(1) + exp(-a));
    case kTanh:
      return tanh(a);
    case kReluBackward:
      return b > C(0) ? a : C(0);
    case kSigmoidBackward:
      return a * b * (C(1) - b);
    case kTanhBackward:
      return a * (C(1) - b * b);
    case kPow:
      return b == C(2) ? a * a : pow(a, b);  // as the CPU: an exponent of 2 squares
  }
  return a;
}

template <typename T>
__global__ void ElementwiseKernel(ElementwiseArgs args) {
  using C = typename Wide<T>::type;
  C values[kMaxOperands + kMaxSteps];
  OF_CUDA_GRID_LOOP(i, args.numel) {
    for (int32_t k = 0; k < args.num_inputs; ++k) {
      const int64_t offset = args.dense[k + 1] ? i : StridedOffset(i, args.ndim, args.sizes, args.strides[k + 1]);
      values[k] = Wide<T>::Load(static_cast<const T*>(args.in[k]) + offset);
    }
    for (int32_t s = 0; s < args.num_steps; ++s) {
      const int32_t b = args.step_b[s];
      values[args.num_inputs + s] = Apply<C>(args.step_code[s], values[args.step_a[s]], b >= 0 ? values[b] : C(0));
    }
    const int64_t offset = args.dense[0] ? i : StridedOffset(i, args.ndim, args.sizes, args.strides[0]);
    const C y = values[args.num_inputs + args.num_steps - 1];
    Wide<T>::Store(static_cast<T*>(args.out) + offset, args.scale == 1 ? y : y * static_cast<C>(args.scale));
  }
}

template <typename T>
void Launch(const ElementwiseArgs& args, cudaStream_t stream) {
  ElementwiseKernel<T><<<BlocksFor(args.numel), kThreads, 0, stream>>>(args);
}

}  // namespace

void LaunchElementwise(Element dtype, const ElementwiseArgs& args, cudaStream_t stream) {
  if (args.numel == 0) return;
  VisitFloating(dtype, [&](auto tag) { Launch<decltype(tag)>(args, stream); });
}

}  // namespace oneflow::cuda
