#include "core/train/init.h"

#include <cmath>

#include "core/session/session.h"
#include "core/tensor/copy.h"
#include "core/tensor/factory.h"

namespace oneflow::init {
namespace {

constexpr int64_t kGrain = 1 << 15;

void CheckTensor(const TensorPtr& t) {
  OF_CHECK(t) << "tensor is null";
  CheckWritable(*t, "tensor");
  OF_CHECK(t->dtype()->is_floating_point()) << "tensor must have a floating-point dtype, got " << t->dtype();
  OF_CHECK(t->device().type == DeviceType::kCPU) << "tensor must be on the CPU, got " << t->device();
}

void CheckFinite(double value, std::string_view name) {
  OF_CHECK(std::isfinite(value)) << name << " must be finite, got " << value;
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Stores value(i), converted to the dtype, into element i (row-major) of t, in parallel.
template <typename Value>
void Fill(const Tensor& t, ThreadPool& pool, const Value& value) {
  // A strided tensor is filled through a contiguous buffer.
  const TensorPtr buffer = t.is_contiguous() ? TensorPtr() : Empty(t.dtype(), t.shape(), Device::CPU());
  const Tensor& out = buffer ? *buffer : t;
  VisitDType(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      T* p = out.data<T>();
      pool.ParallelFor(t.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) p[i] = FromDouble<T>(value(i));
      });
    }
  });
  if (buffer) CopyStrided(*buffer, t, &pool);
  t.MarkWritten();
}

// Fills t with f(r) of standard normal (kNormal) or U[0, 1) draws r from the session's generator,
// drawn in float64 for float64 tensors and in float32 otherwise.
template <bool kNormal, typename Transform>
void FillRandom(const Tensor& t, const Transform& f) {
  if (t.numel() == 0) return;
  Session& session = Session::Current();
  const bool f64 = t.dtype() == DType::Float64();
  const auto draw = kNormal ? Randn : Rand;
  const TensorPtr r = draw(session.generator(), f64 ? DType::Float64() : DType::Float32(), t.shape(), Device::CPU(),
                           &session.thread_pool());
  if (f64) {
    const double* p = r->data<double>();
    Fill(t, session.thread_pool(), [&](int64_t i) { return f(p[i]); });
  } else {
    const float* p = r->data<float>();
    Fill(t, session.thread_pool(), [&](int64_t i) { return f(static_cast<double>(p[i])); });
  }
}

// The random fills take checked-finite parameters and refuse those whose results the tensor's dtype
// cannot represent (they would be written as inf).
void UniformUnchecked(const Tensor& t, double a, double b) {
  CheckRepresentable(a, t.dtype(), "a");
  CheckRepresentable(b, t.dtype(), "b");
  const double width = b - a;
  OF_CHECK(std::isfinite(width)) << "the width b - a of [" << a << ", " << b << ") overflows float64";
  FillRandom<false>(t, [a, width](double u) { return a + width * u; });
}
void NormalUnchecked(const Tensor& t, double mean, double std) {
  // |mean| + std * (the largest |z| the generator draws for this dtype) bounds every result.
  const double bound = std::fabs(mean) + std * MaxStandardNormalDraw(t.dtype());
  OF_CHECK(std::isfinite(bound) && IsRepresentable(bound, t.dtype()))
      << "mean " << mean << " and std " << std << " reach " << bound << " (|mean| + std * the largest draw, "
      << MaxStandardNormalDraw(t.dtype()) << "), beyond the range of " << t.dtype()
      << ": those values would be written as inf";
  FillRandom<true>(t, [mean, std](double z) { return mean + std * z; });
}

// The fan the Kaiming mode names.
int64_t FanForMode(const Shape& shape, std::string_view mode) {
  OF_CHECK(mode == "fan_in" || mode == "fan_out") << "mode must be \"fan_in\" or \"fan_out\", got \"" << mode << "\"";
  const Fans fans = CalculateFans(shape);
  return mode == "fan_in" ? fans.fan_in : fans.fan_out;
}

// The Kaiming std, or 0 for a zero-element tensor (which is left alone).
double KaimingStd(const TensorPtr& tensor, const KaimingOptions& options) {
  CheckTensor(tensor);
  CheckFinite(options.a, "a");
  const double gain = CalculateGain(options.nonlinearity, options.a);
  const int64_t fan = FanForMode(tensor->shape(), options.mode);
  return fan == 0 ? 0.0 : gain / std::sqrt(static_cast<double>(fan));
}

double XavierStd(const TensorPtr& tensor, double gain) {
  CheckTensor(tensor);
  CheckFinite(gain, "gain");
  OF_CHECK(gain >= 0.0) << "gain must be >= 0, got " << gain;
  const Fans fans = CalculateFans(tensor->shape());
  const int64_t sum = fans.fan_in + fans.fan_out;
  return sum == 0 ? 0.0 : gain * std::sqrt(2.0 / static_cast<double>(sum));
}

}  // namespace

Fans CalculateFans(const Shape& shape) {
  OF_CHECK(shape.ndim() >= 2) << "fan in and fan out need a tensor of at least 2 dims (a weight (out, in, ...)), "
                              << "got shape " << shape;
  int64_t receptive = 1;
  for (int64_t i = 2; i < shape.ndim(); ++i) receptive *= shape[i].value();
  return Fans{shape[1].value() * receptive, shape[0].value() * receptive};
}

double CalculateGain(std::string_view nonlinearity, double negative_slope) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid") return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    CheckFinite(negative_slope, "negative_slope");
    return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
  }
  OF_THROW(InvalidArgument) << "nonlinearity must be one of \"linear\", \"sigmoid\", \"tanh\", \"relu\", "
                               "\"leaky_relu\", got \""
                            << nonlinearity << "\"";
}

void Uniform(const TensorPtr& tensor, double a, double b) {
  CheckTensor(tensor);
  CheckFinite(a, "a");
  CheckFinite(b, "b");
  OF_CHECK(a <= b) << "a must not exceed b, got a = " << a << ", b = " << b;
  UniformUnchecked(*tensor, a, b);
}

void Normal(const TensorPtr& tensor, double mean, double std) {
  CheckTensor(tensor);
  CheckFinite(mean, "mean");
  CheckFinite(std, "std");
  OF_CHECK(std >= 0.0) << "std must be >= 0, got " << std;
  NormalUnchecked(*tensor, mean, std);
}

void Constant(const TensorPtr& tensor, double value) {
  CheckTensor(tensor);
  CheckRepresentable(value, tensor->dtype(), "value");
  Fill(*tensor, Session::Current().thread_pool(), [value](int64_t) { return value; });
}

void Zeros(const TensorPtr& tensor) { Constant(tensor, 0.0); }
void Ones(const TensorPtr& tensor) { Constant(tensor, 1.0); }

void KaimingUniform(const TensorPtr& tensor, const KaimingOptions& options) {
  const double bound = std::sqrt(3.0) * KaimingStd(tensor, options);
  UniformUnchecked(*tensor, -bound, bound);
}

void KaimingNormal(const TensorPtr& tensor, const KaimingOptions& options) {
  NormalUnchecked(*tensor, 0.0, KaimingStd(tensor, options));
}

void XavierUniform(const TensorPtr& tensor, double gain) {
  const double bound = std::sqrt(3.0) * XavierStd(tensor, gain);
  UniformUnchecked(*tensor, -bound, bound);
}

void XavierNormal(const TensorPtr& tensor, double gain) { NormalUnchecked(*tensor, 0.0, XavierStd(tensor, gain)); }

}  // namespace oneflow::init
