#include "tests/ops/op_test_util.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "core/tensor/copy.h"

namespace oneflow::test {
namespace {
std::mutex ledger_mutex;
std::set<std::tuple<std::string, DataType, DeviceType>>& Ledger() {
  static std::set<std::tuple<std::string, DataType, DeviceType>> ledger;
  return ledger;
}

double ReadAt(const Tensor& t, int64_t offset) {
  return VisitDType(t.dtype(), [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return static_cast<double>(t.data<T>()[offset]);
  });
}
}  // namespace

void MarkCovered(const std::string& name, Symbol<DType> dtype, DeviceType device) {
  std::lock_guard<std::mutex> lock(ledger_mutex);
  Ledger().emplace(name, dtype->data_type(), device);
}

// Every (op, kernel dtype) of `device`'s kernels in the registry that no test marked (CPU: view ops too);
// used by op_tests_main.cpp and tests/device/cuda_ops_test.cpp.
std::vector<std::string> UncoveredOps(DeviceType device) {
  std::vector<std::string> missing;
  for (const OpDef* op : OpRegistry::Global().All()) {
    std::set<DataType> dtypes;
    for (const KernelDef& k : op->kernels) {
      if (k.device == device) dtypes.insert(k.dtypes.begin(), k.dtypes.end());
    }
    if (op->view != nullptr && device == DeviceType::kCPU && dtypes.empty()) dtypes = {DataType::kFloat32};
    for (DataType d : dtypes) {
      if (!Ledger().count({op->name, d, device})) {
        missing.push_back(op->name + " x " + std::string(DType::Get(d)->name()));
      }
    }
  }
  return missing;
}

int RunConformanceTests(int argc, char** argv, DeviceType device) {
  bool filtered = false;
  for (int i = 1; i < argc; ++i) filtered |= std::strncmp(argv[i], "--gtest_filter", 14) == 0;
  testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  if (!filtered) {
    const std::vector<std::string> missing = UncoveredOps(device);
    const Device where{device, 0};
    for (const std::string& m : missing)
      std::fprintf(stderr, "conformance: no %s test for %s\n", where.ToString().c_str(), m.c_str());
    if (!missing.empty()) {
      std::fprintf(stderr, "conformance: %zu op x dtype pairs of the %s kernels are not covered\n", missing.size(),
                   where.ToString().c_str());
      rc = 1;
    }
  }
  return rc;
}

const std::vector<Symbol<DType>>& FloatingDTypes() {
  static const std::vector<Symbol<DType>> dtypes = {DType::Float16(), DType::BFloat16(), DType::Float32(),
                                                    DType::Float64()};
  return dtypes;
}

Generator& TestGenerator() {
  static Generator gen(1234);
  return gen;
}

TensorPtr FromDoubles(Symbol<DType> dtype, const Shape& shape, const std::vector<double>& values) {
  TensorPtr t = Empty(dtype, shape, Device::CPU());
  EXPECT_EQ(static_cast<int64_t>(values.size()), t->numel());
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        t->data<T>()[i] = T(static_cast<float>(values[i]));
      } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // Through int64: a negative value wraps into an unsigned dtype (double -> uint8 of -2 is UB).
        t->data<T>()[i] = static_cast<T>(static_cast<int64_t>(values[i]));
      } else {
        t->data<T>()[i] = static_cast<T>(values[i]);
      }
    }
  });
  return t;
}

TensorPtr RandomTensor(Symbol<DType> dtype, const Shape& shape, double lo, double hi) {
  TensorPtr u = Rand(TestGenerator(), DType::Float64(), shape, Device::CPU());
  std::vector<double> v(static_cast<size_t>(u->numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    double x = lo + (hi - lo) * u->data<double>()[i];
    if (dtype->is_bool()) x = x >= (lo + hi) / 2 ? 1.0 : 0.0;
    else if (dtype->is_integer()) x = std::floor(x);
    v[i] = x;
  }
  return FromDoubles(dtype, shape, v);
}

std::vector<double> ToDoubles(const TensorPtr& t) {
  std::vector<double> out(static_cast<size_t>(t->numel()));
  const Shape& s = t->shape();
  for (int64_t i = 0; i < t->numel(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, s);
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t->strides()[d];
    out[static_cast<size_t>(i)] = ReadAt(*t, off);
  }
  return out;
}

TensorPtr NonContiguous(const TensorPtr& t) {
  if (t->ndim() == 0) return t;
  Shape wide = t->shape();
  wide[wide.ndim() - 1] = wide[wide.ndim() - 1] * 2;
  TensorPtr base = Full(t->dtype(), wide, 0.0, Device::CPU());
  std::vector<int64_t> strides = base->strides();
  strides.back() = 2;
  TensorPtr view = Tensor::MakeView(*base, t->shape(), strides, 1);
  CopyStrided(*t, *view, nullptr);
  if (t->numel() > 1) {
    EXPECT_FALSE(view->is_contiguous() && t->shape()[t->ndim() - 1].value() > 1);
  }
  return view;
}

double RtolFor(Symbol<DType> dtype) {
  switch (dtype->data_type()) {
    case DataType::kFloat64: return 1e-12;
    case DataType::kFloat32: return 1e-5;
    case DataType::kFloat16: return 2e-3;
    case DataType::kBFloat16: return 1.6e-2;
    default: return 0.0;
  }
}

std::vector<double> RoundedTo(Symbol<DType> dtype, const std::vector<double>& values) {
  return ToDoubles(FromDoubles(dtype, Shape{static_cast<int64_t>(values.size())}, values));
}

double TolFor(Symbol<DType> dtype, double f32, double f64) {
  if (dtype == DType::Float64()) return f64;
  if (dtype == DType::Float32()) return f32;
  return f32 + RtolFor(dtype);
}

void ExpectTensorNear(const TensorPtr& actual, Symbol<DType> dtype, const Shape& shape,
                      const std::vector<double>& expected, double rtol, double atol) {
  ASSERT_TRUE(actual);
  ASSERT_EQ(actual->dtype(), dtype) << "got " << actual->dtype()->name() << ", want " << dtype->name();
  ASSERT_EQ(actual->shape(), shape) << "got " << actual->shape().ToString() << ", want " << shape.ToString();
  const std::vector<double> got = ToDoubles(actual);
  ASSERT_EQ(got.size(), expected.size());
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    const double e = expected[i], a = got[i];
    const bool ok = (std::isnan(e) && std::isnan(a)) || (std::isinf(e) && a == e) ||
                    std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok) {
      ADD_FAILURE() << "element " << i << " of " << shape.ToString() << ": got " << a << ", want " << e;
      ++reported;
    }
  }
}

std::vector<int64_t> Unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.ndim()));
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    const int64_t size = shape[d].value();
    idx[static_cast<size_t>(d)] = size == 0 ? 0 : flat % size;
    flat = size == 0 ? 0 : flat / size;
  }
  return idx;
}

int64_t Ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (int64_t d = 0; d < shape.ndim(); ++d) flat = flat * shape[d].value() + index[static_cast<size_t>(d)];
  return flat;
}

int64_t BroadcastIndex(const std::vector<int64_t>& index, const Shape& from, const Shape& to) {
  int64_t flat = 0;
  const int64_t lead = to.ndim() - from.ndim();
  for (int64_t d = 0; d < from.ndim(); ++d) {
    const int64_t size = from[d].value();
    const int64_t i = size == 1 ? 0 : index[static_cast<size_t>(d + lead)];
    flat = flat * size + i;
  }
  return flat;
}

void ExpectError(const std::function<void()>& fn, StatusCode code, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.message();
    for (const std::string& p : parts) EXPECT_NE(e.message().find(p), std::string::npos) << e.message() << " lacks " << p;
  }
}

void ExpectError(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  ExpectError(fn, StatusCode::kInvalidArgument, parts);
}

void ExpectGradientsMatch(const std::function<TensorPtr(const std::vector<TensorPtr>&)>& fn,
                          const std::vector<TensorPtr>& inputs, double eps, double tol) {
  TensorPtr y = fn(inputs);
  ASSERT_TRUE(y);
  ASSERT_TRUE(y->requires_grad()) << "output does not require grad";
  TensorPtr w = RandomTensor(y->dtype(), y->shape(), -1.0, 1.0);
  for (const TensorPtr& x : inputs) {
    if (x) x->set_grad(nullptr);
  }
  Backward({y}, {w});
  const std::vector<double> wv = ToDoubles(w);
  auto objective = [&]() {
    NoGradGuard no_grad;
    const std::vector<double> yv = ToDoubles(fn(inputs));
    double s = 0;
    for (size_t i = 0; i < yv.size(); ++i) s += yv[i] * wv[i];
    return s;
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorPtr& x = inputs[k];
    if (!x || !x->requires_grad()) continue;
    ASSERT_EQ(x->dtype(), DType::Float64()) << "gradient checks run in float64";
    ASSERT_TRUE(x->is_contiguous());
    ASSERT_TRUE(x->grad()) << "input " << k << " got no gradient";
    const std::vector<double> analytic = ToDoubles(x->grad());
    double* data = x->data<double>();
    int reported = 0;
    for (int64_t i = 0; i < x->numel() && reported < 5; ++i) {
      const double orig = data[i];
      data[i] = orig + eps;
      const double plus = objective();
      data[i] = orig - eps;
      const double minus = objective();
      data[i] = orig;
      const double numeric = (plus - minus) / (2 * eps);
      const double a = analytic[static_cast<size_t>(i)];
      if (std::fabs(a - numeric) > tol * (1 + std::fabs(numeric))) {
        ADD_FAILURE() << "input " << k << " element " << i << ": autograd " << a << ", finite difference " << numeric;
        ++reported;
      }
    }
  }
}

TensorPtr Transposed(const TensorPtr& t) {
  Shape reversed(std::vector<Dim>(t->shape().dims().rbegin(), t->shape().dims().rend()));
  TensorPtr base = Empty(t->dtype(), reversed, Device::CPU());
  std::vector<int64_t> strides(base->strides().rbegin(), base->strides().rend());
  TensorPtr view = Tensor::MakeView(*base, t->shape(), strides, 0);
  CopyStrided(*t, *view, nullptr);
  return view;
}

TensorPtr ChannelsLast(const TensorPtr& t) {
  EXPECT_EQ(t->ndim(), 4) << "ChannelsLast of " << t->shape().ToString();
  return CopyOf(t, nullptr, MemoryFormat::kChannelsLast);
}

std::vector<TensorPtr> Layouts(const TensorPtr& t) {
  std::vector<TensorPtr> out = {t};
  if (t->ndim() > 0 && t->numel() > 1) out.push_back(NonContiguous(t));
  if (t->ndim() > 1 && t->numel() > 1) out.push_back(Transposed(t));
  if (t->ndim() == 4 && Canonical(t->shape(), MemoryFormat::kChannelsLast) == MemoryFormat::kChannelsLast) {
    out.push_back(ChannelsLast(t));
  }
  return out;
}

double InDType(double v, Symbol<DType> dtype) {
  if (dtype->is_bool()) return v != 0.0 ? 1.0 : 0.0;
  if (!dtype->is_integer()) return v;
  if (std::isnan(v)) return 0.0;
  const double t = std::trunc(v);
  const double span = std::ldexp(1.0, static_cast<int>(dtype->bytes() * 8));
  const double lo = dtype->is_signed() ? -span / 2 : 0.0;
  if (t >= lo && t < lo + span) return t;
  double w = std::fmod(t, span);
  if (w < 0) w += span;
  if (dtype->is_signed() && w >= span / 2) w -= span;
  return w;
}

double AtolFor(Symbol<DType> dtype) { return std::max(1e-6, RtolFor(dtype)); }

std::vector<double> BroadcastRef(const Shape& out, const std::vector<const TensorPtr*>& in,
                                 const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<double>> values;
  for (const TensorPtr* t : in) values.push_back(ToDoubles(*t));
  std::vector<double> expected(static_cast<size_t>(out.numel()));
  std::vector<double> args(in.size());
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, out);
    for (size_t k = 0; k < in.size(); ++k) {
      args[k] = values[k][static_cast<size_t>(BroadcastIndex(idx, (*in[k])->shape(), out))];
    }
    expected[static_cast<size_t>(i)] = f(args);
  }
  return expected;
}

}  // namespace oneflow::test

namespace oneflow::test {

int FreeTcpPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0;
  if (fd >= 0) close(fd);
  EXPECT_TRUE(ok) << "no free TCP port";
  return ntohs(sa.sin_port);
}

}  // namespace oneflow::test
