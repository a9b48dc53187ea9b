// Parameter initialisers (PyTorch's torch.nn.init): fill a floating-point CPU tensor in place.
//
// The random ones draw from the current session's generator (Session::Current(), which the C ABI sets
// per call) and fill in parallel on its thread pool; element i comes from counter (start + i), so the
// result depends only on the seed and the order of random calls, never on the thread count. Any
// layout is accepted (strided tensors are filled element by element in row-major order).
//
// Errors (InvalidArgument, naming the argument): a null, non-floating or non-CPU tensor, non-finite
// parameters, a > b, std < 0, an unknown mode or nonlinearity name, fewer than 2 dims where fans are
// needed. A call that fails writes nothing and leaves the generator alone. A zero-element tensor is
// left as it is (after the checks), as in PyTorch.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/common/shape.h"
#include "core/tensor/tensor.h"

namespace oneflow::init {

// PyTorch's _calculate_fan_in_and_fan_out: for a weight (out, in, *kernel), fan_in = in * prod(kernel)
// and fan_out = out * prod(kernel). Linear weights are (out, in), conv2d weights (O, I/groups, kH, kW).
struct Fans {
  int64_t fan_in;
  int64_t fan_out;
};
Fans CalculateFans(const Shape& shape);

// PyTorch's calculate_gain: "linear" and "sigmoid" 1, "tanh" 5/3, "relu" sqrt(2), "leaky_relu"
// sqrt(2 / (1 + negative_slope^2)).
double CalculateGain(std::string_view nonlinearity, double negative_slope = 0.01);

void Uniform(const TensorPtr& tensor, double a = 0.0, double b = 1.0);     // U[a, b)
void Normal(const TensorPtr& tensor, double mean = 0.0, double std = 1.0);  // N(mean, std^2)
void Constant(const TensorPtr& tensor, double value);  // value must be representable in the dtype
void Zeros(const TensorPtr& tensor);
void Ones(const TensorPtr& tensor);

// He et al.: std = gain(nonlinearity, a) / sqrt(fan), fan chosen by `mode` ("fan_in" or "fan_out");
// uniform draws from U(-sqrt(3) std, sqrt(3) std). PyTorch's defaults.
struct KaimingOptions {
  double a = 0.0;  // negative slope of leaky_relu (ignored by the other nonlinearities)
  std::string_view mode = "fan_in";
  std::string_view nonlinearity = "leaky_relu";
};
void KaimingUniform(const TensorPtr& tensor, const KaimingOptions& options = {});
void KaimingNormal(const TensorPtr& tensor, const KaimingOptions& options = {});

// Glorot & Bengio: std = gain * sqrt(2 / (fan_in + fan_out)); uniform draws from U(-sqrt(3) std, ..).
void XavierUniform(const TensorPtr& tensor, double gain = 1.0);
void XavierNormal(const TensorPtr& tensor, double gain = 1.0);

}  // namespace oneflow::init
