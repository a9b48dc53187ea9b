#include "core/tensor/factory.h"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "core/common/philox.h"
#include "core/tensor/copy.h"

namespace oneflow {
namespace {

size_t ByteSize(Symbol<DType> dtype, const Shape& shape) {
  CheckStatic(shape, "shape");
  const auto numel = static_cast<uint64_t>(shape.numel());
  // Byte offsets are computed in int64 (and the allocator rounds sizes up), so the byte size must fit.
  if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dtype->bytes()) {
    OF_THROW(ResourceExhausted) << "a " << dtype << " tensor of shape " << shape
                                << " does not fit in memory";
  }
  return static_cast<size_t>(numel) * dtype->bytes();
}

// Builds the tensor's contents in host memory with fill(host_ptr), then places it on `device`.
template <typename Fill>
TensorPtr MakeFilled(Symbol<DType> dtype, const Shape& shape, Device device, Fill&& fill) {
  const size_t nbytes = ByteSize(dtype, shape);
  auto storage = Storage::Allocate(device, nbytes);
  if (device.type == DeviceType::kCPU) {
    fill(storage->data());
  } else {
    std::vector<char> staging(nbytes);
    fill(staging.data());
    GetBackend(device).CopyFromHost(storage->data(), staging.data(), nbytes);
  }
  return Tensor::Make(std::move(storage), dtype, shape);
}

template <typename T>
T CastFromDouble(double v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Elements per chunk of a parallel random fill: ~20 us of Philox + log/cos work.
constexpr int64_t kRandomGrain = 1 << 12;

// The largest value below 1 that T holds exactly.
template <typename T>
double LargestBelowOne() {
  if constexpr (std::is_same_v<T, float16>) return 1.0 - 0x1.0p-11;
  if constexpr (std::is_same_v<T, bfloat16>) return 1.0 - 0x1.0p-8;
  if constexpr (std::is_same_v<T, float>) return 1.0 - 0x1.0p-24;
  return 1.0 - 0x1.0p-53;
}

}  // namespace

bool IsRepresentable(double value, Symbol<DType> dtype) {
  bool ok = false;
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      ok = value == 0.0 || value == 1.0;
    } else if constexpr (std::is_integral_v<T>) {
      // Compare against powers of two, which doubles hold exactly.
      const double lo = static_cast<double>(std::numeric_limits<T>::min());
      const double hi_exclusive = static_cast<double>(std::numeric_limits<T>::max() / 2 + 1) * 2.0;
      ok = std::isfinite(value) && std::trunc(value) == value && value >= lo && value < hi_exclusive;
    } else {
      const double max = std::is_same_v<T, float16> ? 65504.0
                         : std::is_same_v<T, bfloat16> ? 3.3895313892515355e38
                         : std::is_same_v<T, float> ? static_cast<double>(std::numeric_limits<float>::max())
                                                   : std::numeric_limits<double>::max();
      ok = !std::isfinite(value) || std::fabs(value) <= max;
    }
  });
  return ok;
}

void CheckRepresentable(double value, Symbol<DType> dtype, std::string_view what) {
  if (!IsRepresentable(value, dtype)) OF_THROW(InvalidArgument) << what << " " << value << " is not representable in " << dtype;
}

double MaxStandardNormalDraw(Symbol<DType> dtype) {
  // Box-Muller from u1 in [0, 1): |z| <= sqrt(-2 ln(1 - u1)) <= sqrt(-2 ln 2^-bits), with 53 random bits
  // for float64 and 24 for the other dtypes (drawn as float32).
  const double bits = dtype == DType::Float64() ? 53.0 : 24.0;
  return std::sqrt(2.0 * bits * std::numbers::ln2);
}

TensorPtr Empty(Symbol<DType> dtype, const Shape& shape, Device device, MemoryFormat format) {
  return Tensor::Make(Storage::Allocate(device, ByteSize(dtype, shape)), dtype, shape, format);
}

int64_t FirstNonBooleanByte(const void* data, int64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (int64_t k = 0; k < n; ++k) {
    if (bytes[k] > 1) return k;
  }
  return -1;
}

namespace {
// INVALID_ARGUMENT naming the first byte of bool data that is neither 0 nor 1 (Note [Bool bytes]).
void CheckBooleanBytes(Symbol<DType> dtype, const void* data, int64_t n) {
  if (!dtype->is_bool() || n == 0) return;
  const int64_t k = FirstNonBooleanByte(data, n);
  OF_CHECK(k < 0) << "bool data holds the byte " << int{static_cast<const unsigned char*>(data)[k]} << " at element "
                  << k << "; a bool is the byte 0 (false) or 1 (true)";
}
}  // namespace

TensorPtr Full(Symbol<DType> dtype, const Shape& shape, double value, Device device) {
  CheckRepresentable(value, dtype, "value");
  return MakeFilled(dtype, shape, device, [&](void* out) {
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = CastFromDouble<T>(value);
      T* p = static_cast<T*>(out);
      std::fill(p, p + shape.numel(), v);
    });
  });
}

TensorPtr FromHost(Symbol<DType> dtype, const Shape& shape, const void* data, size_t nbytes, Device device) {
  const size_t expected = ByteSize(dtype, shape);
  OF_CHECK(nbytes == expected) << "data is " << nbytes << " bytes but a " << dtype << " tensor of shape "
                                << shape << " needs " << expected;
  OF_CHECK(data != nullptr || expected == 0) << "data is NULL";
  CheckBooleanBytes(dtype, data, shape.numel());
  return MakeFilled(dtype, shape, device, [&](void* out) {
    if (expected > 0) std::memcpy(out, data, expected);
  });
}

TensorPtr AdoptHost(Symbol<DType> dtype, const Shape& shape, void* data, size_t nbytes, Storage::Deleter deleter) {
  // Storage::Adopt takes the deleter first, so every later failure releases the memory through it.
  auto storage = Storage::Adopt(Device::CPU(), data, nbytes, std::move(deleter));
  const size_t expected = ByteSize(dtype, shape);
  OF_CHECK(nbytes == expected) << "data is " << nbytes << " bytes but a " << dtype << " tensor of shape "
                                << shape << " needs " << expected;
  OF_CHECK(data != nullptr || expected == 0) << "data is NULL";
  OF_CHECK(reinterpret_cast<uintptr_t>(data) % dtype->bytes() == 0)
      << "data at " << data << " is not aligned to " << dtype->bytes() << " bytes, as " << dtype
      << " requires";
  CheckBooleanBytes(dtype, data, shape.numel());
  return Tensor::Make(std::move(storage), dtype, shape);
}

TensorPtr AdoptStridedHost(Symbol<DType> dtype, const Shape& shape, const std::vector<int64_t>& strides, void* first,
                           Storage::Deleter deleter, bool read_only) {
  // The extent the elements span, from `first`: (the largest offset + 1) elements, 0 when empty.
  int64_t extent = 0;
  try {
    OF_CHECK(strides.size() == static_cast<size_t>(shape.ndim()))
        << "strides has " << strides.size() << " values for a shape of " << shape.ndim() << " dims";
    const int64_t numel = shape.numel();  // concrete and not overflowing (Shape checks)
    if (numel > 0) {
      int64_t last = 0;
      for (size_t d = 0; d < strides.size(); ++d) {
        OF_CHECK(strides[d] >= 0) << "stride " << strides[d] << " of dim " << d
                                  << " is negative; only strides >= 0 are supported (make a copy first)";
        int64_t span = 0;
        OF_CHECK(!__builtin_mul_overflow(shape[static_cast<int64_t>(d)].value(), strides[d], &span) &&
                 !__builtin_add_overflow(last, span - strides[d], &last))
            << "strides (" << fmt::format("{}", fmt::join(strides, ", ")) << ") of shape " << shape
            << " address elements beyond int64";
      }
      OF_CHECK(last < INT64_MAX / static_cast<int64_t>(dtype->bytes()))
          << "strides of shape " << shape << " address more than INT64_MAX bytes";
      extent = last + 1;
    }
    OF_CHECK(first != nullptr || extent == 0) << "data is NULL";
    OF_CHECK(reinterpret_cast<uintptr_t>(first) % dtype->bytes() == 0)
        << "the first element at " << first << " is not aligned to " << dtype->bytes() << " bytes, as " << dtype
        << " requires";
  } catch (...) {
    if (deleter) deleter(first);
    throw;
  }
  auto storage = Storage::Adopt(Device::CPU(), first, static_cast<size_t>(extent) * dtype->bytes(), std::move(deleter),
                                read_only);
  TensorPtr base = Tensor::Make(std::move(storage), dtype, Shape({Dim(extent)}));
  TensorPtr t = Tensor::MakeView(*base, shape, strides, 0);
  if (dtype->is_bool() && t->numel() > 0) {  // Note [Bool bytes]: the elements themselves, not the gaps
    const TensorPtr dense = MakeContiguous(t, nullptr);
    CheckBooleanBytes(dtype, dense->raw_data(), dense->numel());
  }
  return t->is_contiguous() ? Tensor::Make(t->storage(), dtype, shape) : t;
}

namespace {
template <bool kNormal>
TensorPtr RandomTensor(Generator& gen, Symbol<DType> dtype, const Shape& shape, Device device, ThreadPool* pool) {
  OF_CHECK(dtype->is_floating_point()) << "dtype must be floating point, got " << dtype;
  const int64_t n = shape.numel();
  // The counters are reserved inside the fill, which runs after the allocation succeeded: a call that
  // fails leaves the generator where it was.
  return MakeFilled(dtype, shape, device, [&](void* out) {
    const Generator::Range range = gen.Reserve(static_cast<uint64_t>(n));
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_integral_v<T>) {
        T* p = static_cast<T*>(out);
        auto fill = [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            const auto w = Philox4x32(range.key, 0, range.first_counter + static_cast<uint64_t>(i));
            double v;
            if constexpr (std::is_same_v<T, double>) {
              const double u1 = UniformDouble(w[0], w[1]);
              v = kNormal ? std::sqrt(-2.0 * std::log1p(-u1)) *
                                std::cos(2.0 * std::numbers::pi * UniformDouble(w[2], w[3]))
                          : u1;
            } else {
              const float u1 = UniformFloat(w[0]);
              v = kNormal ? std::sqrt(-2.0 * std::log1p(-static_cast<double>(u1))) *
                                std::cos(2.0 * std::numbers::pi * static_cast<double>(UniformFloat(w[1])))
                          : static_cast<double>(u1);
            }
            T x = CastFromDouble<T>(v);
            // Rounding to a 16-bit type can turn a value just below 1 into 1; keep rand in [0, 1).
            if (!kNormal && static_cast<double>(x) >= 1.0) x = CastFromDouble<T>(LargestBelowOne<T>());
            p[i] = x;
          }
        };
        if (pool != nullptr) {
          pool->ParallelFor(n, kRandomGrain, fill);
        } else {
          fill(0, n);
        }
      }
    });
  });
}
}  // namespace

TensorPtr Rand(Generator& gen, Symbol<DType> dtype, const Shape& shape, Device device, ThreadPool* pool) {
  return RandomTensor<false>(gen, dtype, shape, device, pool);
}

TensorPtr Randn(Generator& gen, Symbol<DType> dtype, const Shape& shape, Device device, ThreadPool* pool) {
  return RandomTensor<true>(gen, dtype, shape, device, pool);
}

TensorPtr Arange(double start, double end, double step, Symbol<DType> dtype, Device device) {
  OF_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step))
      << "start, end and step must be finite, got " << start << ", " << end << ", " << step;
  OF_CHECK(step != 0.0) << "step must not be zero";
  OF_CHECK((step > 0 && end >= start) || (step < 0 && end <= start))
      << "end " << end << " cannot be reached from start " << start << " with step " << step;
  OF_CHECK(!dtype->is_bool()) << "dtype bool is not supported";
  const double count = std::ceil((end - start) / step);
  // Creation's rules: a count past int64 is OUT_OF_RANGE; a count that fits but cannot be allocated is
  // RESOURCE_EXHAUSTED (from the allocation below).
  if (!(count < 0x1p63)) {
    OF_THROW(OutOfRange) << "(end - start) / step = " << count << " elements exceed the int64 range";
  }
  const auto n = static_cast<int64_t>(count);
  OF_CHECK(!dtype->is_integer() || std::trunc(step) == step)
      << "step " << step << " must be integral for dtype " << dtype;
  if (n > 0) {
    CheckRepresentable(start, dtype, "start");
    CheckRepresentable(start + static_cast<double>(n - 1) * step, dtype, "last value");
  }
  return MakeFilled(dtype, Shape{n}, device, [&](void* out) {
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = static_cast<T*>(out);
      for (int64_t i = 0; i < n; ++i) p[i] = CastFromDouble<T>(start + static_cast<double>(i) * step);
    });
  });
}

void CopyToHost(const Tensor& tensor, void* dst, size_t nbytes) {
  CheckEager(tensor, "the tensor");
  OF_CHECK(nbytes == tensor.nbytes()) << "the buffer is " << nbytes << " bytes but the "
                                       << tensor.dtype() << " tensor of shape " << tensor.shape() << " holds "
                                       << tensor.nbytes();
  OF_CHECK(dst != nullptr || nbytes == 0) << "the destination buffer is NULL";
  // A view is gathered into a contiguous copy first (CPU; other devices' views need their kernels).
  const TensorPtr dense = MakeContiguous(TensorPtr(const_cast<Tensor*>(&tensor)), nullptr);
  GetBackend(tensor.device()).CopyToHost(dst, dense->raw_data(), nbytes);
}

TensorPtr CopyToDevice(const TensorPtr& tensor, Device device) {
  CheckEager(*tensor, "the tensor");
  if (device == tensor->device() && device.type == DeviceType::kCPU) return CopyOf(tensor, nullptr);
  const TensorPtr out = Empty(tensor->dtype(), tensor->shape(), device);
  const TensorPtr dense = MakeContiguous(tensor, nullptr);  // a view is gathered on its device first
  const size_t nbytes = out->nbytes();
  if (tensor->device() == device) {
    GetBackend(device).Copy(out->raw_data(), dense->raw_data(), nbytes);
  } else if (tensor->device().type == DeviceType::kCPU) {
    GetBackend(device).CopyFromHost(out->raw_data(), dense->raw_data(), nbytes);
  } else if (device.type == DeviceType::kCPU) {
    GetBackend(tensor->device()).CopyToHost(out->raw_data(), dense->raw_data(), nbytes);
  } else {  // between two GPUs: through the host
    std::vector<std::byte> host(nbytes);
    GetBackend(tensor->device()).CopyToHost(host.data(), dense->raw_data(), nbytes);
    GetBackend(device).CopyFromHost(out->raw_data(), host.data(), nbytes);
  }
  return out;
}

}  // namespace oneflow
