// The SGD update in place, one thread per parameter element, computed as the CPU's loop (core/train/
// optimizer_ops.cpp) computes it in T.
#include "core/ops/cuda/index.cuh"
#include "core/ops/cuda/launch.h"

namespace oneflow::cuda {
namespace {

template <typename T>
__global__ void SgdKernel(SgdArgs a) {
  if (a.found_inf != nullptr && *a.found_inf != 0.0f) return;  // a loss-scaled step with overflows: skipped
  const T inv_scale = a.scale != nullptr ? static_cast<T>(1.0 / static_cast<double>(*a.scale)) : T(1);
  const T lr = static_cast<T>(a.lr), wd = static_cast<T>(a.weight_decay), momentum = static_cast<T>(a.momentum);
  const T keep = static_cast<T>(1.0 - a.dampening);
  T* p = static_cast<T*>(a.param);
  const T* g = static_cast<const T*>(a.grad);
  T* buf = static_cast<T*>(a.buf);
  OF_CUDA_GRID_LOOP(i, a.n) {
    const T gi = g[i] * inv_scale;
    T d = a.weight_decay != 0 ? gi + wd * p[i] : gi;
    if (buf != nullptr) {
      const T b = a.first_step ? d : momentum * buf[i] + keep * d;
      buf[i] = b;
      d = a.nesterov ? d + momentum * b : b;
    }
    p[i] -= lr * d;
  }
}

}  // namespace

void LaunchSgd(Element dtype, const SgdArgs& args, cudaStream_t stream) {
  if (args.n == 0) return;
  if (dtype == Element::kFloat64) {
    SgdKernel<double><<<BlocksFor(args.n), kThreads, 0, stream>>>(args);
  } else {
    SgdKernel<float><<<BlocksFor(args.n), kThreads, 0, stream>>>(args);
  }
}

}  // namespace oneflow::cuda
