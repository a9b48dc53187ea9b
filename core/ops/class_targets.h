// The class-index targets of nll_loss and cross_entropy, as every backend's kernels check them (core/ops/nn.cpp
// for the CPU, core/ops/cuda/nn_kernels.cpp for CUDA, which copies the targets to the host first).
#pragma once

#include <cstdint>
#include <string>

#include "core/common/error.h"
#include "core/common/shape.h"
#include "core/op/attrs.h"
#include "core/ops/ops.h"

namespace oneflow {

// The samples of a loss call: sample r = (n, k) (k over d1 x ...) has its C class values at
// base(r) + c * inner.
struct LossShape {
  int64_t n, c, inner;
  ops::Reduction reduction;
  int64_t ignore_index;
  double total_weight;  // the weights of the targets that are not ignore_index (their count without weights)
  int64_t samples() const { return n * inner; }
  int64_t base(int64_t r) const { return (r / inner) * c * inner + r % inner; }
};

// Validates the targets `t` (host memory, one per sample of an input of shape `input`: every one in [0, C)
// or ignore_index) and sums the class weights (host memory, C of them; null: 1 each) of those not ignored.
template <typename W>
LossShape CheckTargets(const Shape& input, const int64_t* t, const W* weight, const Attrs& attrs) {
  LossShape l{input[0].value(),
              input[1].value(),
              1,
              ops::ReductionFromName(attrs.Get<std::string>("reduction")),
              attrs.Int("ignore_index"),
              0};
  for (int64_t d = 2; d < input.ndim(); ++d) l.inner *= input[d].value();
  for (int64_t i = 0; i < l.samples(); ++i) {
    if (t[i] == l.ignore_index) continue;
    if (t[i] < 0 || t[i] >= l.c) {
      OF_THROW(InvalidArgument) << "target[" << i << "] = " << t[i] << " is out of range for " << l.c
                                << " classes (expected 0.." << l.c - 1 << " or ignore_index " << l.ignore_index << ")";
    }
    l.total_weight += weight ? static_cast<double>(weight[t[i]]) : 1.0;
  }
  return l;
}

}  // namespace oneflow
