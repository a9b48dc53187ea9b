// Eager tensors: factory functions, storage ownership, the CPU backend and devices.
#include "core/tensor/factory.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/device/device.h"
#include "core/session/generator.h"
#include "core/tensor/storage.h"
#include "core/tensor/tensor.h"
#include "tests/core/test_util.h"

namespace oneflow {
namespace {

using testing::ExpectDeviceUnavailable;
using testing::ExpectError;

const Device kCpu = Device::CPU();

std::vector<Symbol<DType>> AllDTypes() {
  std::vector<Symbol<DType>> all;
  for (int32_t c = 1; c <= 10; ++c) all.push_back(DType::Get(c));
  return all;
}

std::vector<Symbol<DType>> FloatingDTypes() {
  return {DType::Float16(), DType::BFloat16(), DType::Float32(), DType::Float64()};
}

// The tensor's elements as doubles, read through CopyToHost and decoded here (16-bit types from
// their bits with ldexp, independently of half.h).
double DecodeF16(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0x1f ? (m ? NAN : INFINITY) : e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
double DecodeBF16(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<unsigned char> bytes(t.nbytes());
  CopyToHost(t, bytes.data(), bytes.size());
  std::vector<double> out(static_cast<size_t>(t.numel()));
  const unsigned char* p = bytes.data();
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()->data_type()) {
      case DataType::kBool: out[i] = p[i] ? 1 : 0; break;
      case DataType::kInt8: { int8_t v; std::memcpy(&v, p + i, 1); out[i] = v; break; }
      case DataType::kUInt8: out[i] = p[i]; break;
      case DataType::kInt16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = v; break; }
      case DataType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
      case DataType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); out[i] = static_cast<double>(v); break; }
      case DataType::kFloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = DecodeF16(v); break; }
      case DataType::kBFloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = DecodeBF16(v); break; }
      case DataType::kFloat32: { float v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
      case DataType::kFloat64: { double v; std::memcpy(&v, p + 8 * i, 8); out[i] = v; break; }
      default: ADD_FAILURE() << "unexpected dtype"; break;
    }
  }
  return out;
}

size_t CpuBytesInUse() { return GetBackend(kCpu).allocator().bytes_in_use(); }

// ---- Empty / metadata --------------------------------------------------------------------------

TEST(Tensor, EmptyMetadataForEveryDType) {
  for (Symbol<DType> d : AllDTypes()) {
    SCOPED_TRACE(std::string(d->name()));
    const TensorPtr t = Empty(d, Shape{2, 3, 4}, kCpu);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->dtype().get(), d.get());
    EXPECT_EQ(t->shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(t->ndim(), 3);
    EXPECT_EQ(t->numel(), 24);
    EXPECT_EQ(t->nbytes(), 24 * d->bytes());
    EXPECT_EQ(t->strides(), (std::vector<int64_t>{12, 4, 1}));
    EXPECT_EQ(t->storage_offset(), 0);
    EXPECT_TRUE(t->is_contiguous());
    EXPECT_EQ(t->device(), kCpu);
    EXPECT_GE(t->storage()->nbytes(), t->nbytes());
    EXPECT_EQ(t->raw_data(), t->storage()->data());
  }
  const TensorPtr scalar = Empty(DType::Float32(), Shape(), kCpu);
  EXPECT_EQ(scalar->numel(), 1);
  EXPECT_EQ(scalar->nbytes(), 4u);
  EXPECT_EQ(scalar->ndim(), 0);
  const TensorPtr zero = Empty(DType::Float32(), Shape{3, 0}, kCpu);
  EXPECT_EQ(zero->numel(), 0);
  EXPECT_EQ(zero->nbytes(), 0u);
}

TEST(Tensor, NonStaticShapesAreRejected) {
  const Dim n = Dim::NewSymbol("N");
  ExpectError([] { Empty(DType::Float32(), Shape{2, Dim::Unknown()}, kCpu); }, StatusCode::kInvalidArgument,
              "not concrete", "(2, ?)");
  ExpectError([&] { Full(DType::Float32(), Shape{n, 3}, 1.0, kCpu); }, StatusCode::kInvalidArgument,
              "not concrete", "(N, 3)");
  const float data[2] = {};
  ExpectError([&] { FromHost(DType::Float32(), Shape{Dim::Unknown()}, data, 8, kCpu); },
              StatusCode::kInvalidArgument, "not concrete");
  Generator gen(1);
  ExpectError([&] { Rand(gen, DType::Float32(), Shape{n}, kCpu); }, StatusCode::kInvalidArgument, "not concrete");
  ExpectError([&] { Randn(gen, DType::Float32(), Shape{Dim::Unknown()}, kCpu); }, StatusCode::kInvalidArgument,
              "not concrete");
}

// ---- Full ---------------------------------------------------------------------------------------

TEST(Tensor, FullReadsBackForEveryDType) {
  struct Case {
    Symbol<DType> dtype;
    double value;
    std::vector<unsigned char> element;  // the expected bytes of one element (little-endian)
  };
  const Case cases[] = {
      {DType::Bool(), 1.0, {1}},
      {DType::Bool(), 0.0, {0}},
      {DType::Int8(), -7.0, {0xf9}},
      {DType::UInt8(), 200.0, {200}},
      {DType::Int16(), -300.0, {0xd4, 0xfe}},
      {DType::Int32(), 123456789.0, {0x15, 0xcd, 0x5b, 0x07}},
      {DType::Int64(), -2.0, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
      {DType::Float16(), 2.5, {0x00, 0x41}},   // 0x4100
      {DType::Float16(), -65504.0, {0xff, 0xfb}},
      {DType::BFloat16(), 2.5, {0x20, 0x40}},  // 0x4020
      {DType::Float32(), 2.5, {0x00, 0x00, 0x20, 0x40}},
      {DType::Float64(), -0.125, {0, 0, 0, 0, 0, 0, 0xc0, 0xbf}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {}", c.dtype, c.value));
    ASSERT_EQ(c.element.size(), c.dtype->bytes());
    const TensorPtr t = Full(c.dtype, Shape{2, 3}, c.value, kCpu);
    EXPECT_EQ(t->dtype().get(), c.dtype.get());
    EXPECT_EQ(t->shape(), (Shape{2, 3}));
    std::vector<unsigned char> bytes(t->nbytes());
    CopyToHost(*t, bytes.data(), bytes.size());
    for (size_t i = 0; i < 6; ++i) {
      for (size_t b = 0; b < c.element.size(); ++b) {
        ASSERT_EQ(bytes[i * c.element.size() + b], c.element[b]) << "element " << i << " byte " << b;
      }
    }
    for (double v : ToDoubles(*t)) EXPECT_EQ(v, c.value);
  }
  // Non-finite values are representable in floating dtypes.
  EXPECT_TRUE(std::isinf(ToDoubles(*Full(DType::Float32(), Shape{1}, INFINITY, kCpu))[0]));
  EXPECT_TRUE(std::isnan(ToDoubles(*Full(DType::Float16(), Shape{1}, NAN, kCpu))[0]));
  EXPECT_TRUE(std::isinf(ToDoubles(*Full(DType::BFloat16(), Shape{1}, -INFINITY, kCpu))[0]));
}

TEST(Tensor, CheckRepresentable) {
  auto ok = [](double v, Symbol<DType> d) {
    EXPECT_NO_THROW(CheckRepresentable(v, d, "value")) << v << " in " << d->name();
  };
  auto bad = [](double v, Symbol<DType> d) {
    SCOPED_TRACE(fmt::format("{} in {}", v, d));
    ExpectError([&] { CheckRepresentable(v, d, "fill value"); }, StatusCode::kInvalidArgument, "fill value",
                std::string(d->name()));
  };
  bad(2.5, DType::Int32());
  bad(0.5, DType::Int64());
  bad(NAN, DType::Int32());
  bad(INFINITY, DType::Int64());
  ok(127, DType::Int8());
  ok(-128, DType::Int8());
  bad(128, DType::Int8());
  bad(-129, DType::Int8());
  ok(0, DType::UInt8());
  ok(255, DType::UInt8());
  bad(-1, DType::UInt8());
  bad(256, DType::UInt8());
  ok(32767, DType::Int16());
  bad(32768, DType::Int16());
  bad(-32769, DType::Int16());
  ok(2147483647.0, DType::Int32());
  ok(-2147483648.0, DType::Int32());
  bad(2147483648.0, DType::Int32());
  bad(-2147483649.0, DType::Int32());
  ok(-9223372036854775808.0, DType::Int64());             // -2^63
  ok(9223372036854774784.0, DType::Int64());              // the largest double below 2^63
  bad(9223372036854775808.0, DType::Int64());             // 2^63
  bad(-9223372036854777856.0, DType::Int64());            // the next double below -2^63
  ok(0, DType::Bool());
  ok(1, DType::Bool());
  bad(2, DType::Bool());
  bad(-1, DType::Bool());
  bad(0.5, DType::Bool());
  bad(NAN, DType::Bool());
  ok(65504, DType::Float16());
  ok(-65504, DType::Float16());
  ok(0.1, DType::Float16());  // rounds, but is in range
  bad(1e6, DType::Float16());
  bad(-70000, DType::Float16());
  ok(INFINITY, DType::Float16());
  ok(NAN, DType::Float16());
  ok(1e38, DType::BFloat16());
  bad(1e39, DType::BFloat16());
  ok(INFINITY, DType::Float32());
  ok(-INFINITY, DType::Float32());
  ok(NAN, DType::Float32());
  ok(3.4028234663852886e38, DType::Float32());
  bad(1e39, DType::Float32());
  ok(1e300, DType::Float64());
  ok(std::numeric_limits<double>::max(), DType::Float64());
  // Full applies the same rule before allocating anything.
  const size_t before = CpuBytesInUse();
  ExpectError([] { Full(DType::Int8(), Shape{4}, 128, kCpu); }, StatusCode::kInvalidArgument, "128", "int8");
  ExpectError([] { Full(DType::Bool(), Shape{4}, 2, kCpu); }, StatusCode::kInvalidArgument, "bool");
  ExpectError([] { Full(DType::Float16(), Shape{4}, 1e6, kCpu); }, StatusCode::kInvalidArgument, "float16");
  EXPECT_EQ(CpuBytesInUse(), before);
}

// ---- FromHost / CopyToHost ------------------------------------------------------------------

TEST(Tensor, FromHostCopiesAndCopyToHostReturnsTheData) {
  std::vector<int32_t> src = {1, -2, 3, -4, 5, -6};
  const TensorPtr t = FromHost(DType::Int32(), Shape{3, 2}, src.data(), src.size() * 4, kCpu);
  EXPECT_NE(t->raw_data(), static_cast<void*>(src.data()));  // a copy
  src[0] = 99;                                                // does not affect the tensor
  std::vector<int32_t> dst(6, 0);
  CopyToHost(*t, dst.data(), dst.size() * 4);
  EXPECT_EQ(dst, (std::vector<int32_t>{1, -2, 3, -4, 5, -6}));
  EXPECT_EQ(t->data<int32_t>()[5], -6);

  // A zero-element tensor may come from NULL.
  const TensorPtr empty = FromHost(DType::Float64(), Shape{0, 4}, nullptr, 0, kCpu);
  EXPECT_EQ(empty->numel(), 0);
  CopyToHost(*empty, nullptr, 0);
}

TEST(Tensor, FromHostAndCopyToHostSizeErrors) {
  const float src[6] = {};
  ExpectError([&] { FromHost(DType::Float32(), Shape{2, 3}, src, 20, kCpu); }, StatusCode::kInvalidArgument,
              "20", "24");
  ExpectError([&] { FromHost(DType::Float32(), Shape{2, 3}, src, 48, kCpu); }, StatusCode::kInvalidArgument,
              "48", "24");
  ExpectError([&] { FromHost(DType::Float32(), Shape{2, 3}, nullptr, 24, kCpu); }, StatusCode::kInvalidArgument,
              "NULL");
  const TensorPtr t = Full(DType::Float32(), Shape{2, 3}, 1, kCpu);
  float dst[6];
  ExpectError([&] { CopyToHost(*t, dst, 12); }, StatusCode::kInvalidArgument, "12", "24");
  ExpectError([&] { CopyToHost(*t, nullptr, 24); }, StatusCode::kInvalidArgument, "NULL");
}

// ---- AdoptHost and Storage ------------------------------------------------------------------

TEST(Tensor, AdoptHostDoesNotCopyAndRunsTheDeleterOnceOnLastRelease) {
  auto* buf = new float[4]{1, 2, 3, 4};
  int deleted = 0;
  void* deleted_ptr = nullptr;
  const size_t before = CpuBytesInUse();
  TensorPtr t = AdoptHost(DType::Float32(), Shape{2, 2}, buf, 16, [&](void* p) {
    ++deleted;
    deleted_ptr = p;
    delete[] static_cast<float*>(p);
  });
  EXPECT_EQ(t->raw_data(), static_cast<void*>(buf));
  EXPECT_EQ(CpuBytesInUse(), before);  // not from the allocator
  buf[3] = 40;                         // shared memory: the tensor sees it
  EXPECT_EQ(ToDoubles(*t), (std::vector<double>{1, 2, 3, 40}));
  TensorPtr copy = t;
  t = nullptr;
  EXPECT_EQ(deleted, 0);
  std::shared_ptr<Storage> storage = copy->storage();
  copy = nullptr;
  EXPECT_EQ(deleted, 0);  // the storage is still referenced
  storage.reset();
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(deleted_ptr, static_cast<void*>(buf));
}

TEST(Tensor, AdoptHostRunsTheDeleterWhenItFails) {
  alignas(64) static unsigned char buffer[64];
  int deleted = 0;
  auto deleter = [&](void* p) {
    // Called with the pointer that was passed in (or NULL when NULL was passed).
    EXPECT_TRUE(p == nullptr || (p >= static_cast<void*>(buffer) && p < static_cast<void*>(buffer + 64)));
    ++deleted;
  };
  ExpectError([&] { AdoptHost(DType::Float32(), Shape{4}, buffer, 12, deleter); }, StatusCode::kInvalidArgument,
              "12", "16");
  EXPECT_EQ(deleted, 1);
  // Misaligned for float32 (4 bytes).
  ExpectError([&] { AdoptHost(DType::Float32(), Shape{2}, buffer + 2, 8, deleter); }, StatusCode::kInvalidArgument,
              "aligned");
  EXPECT_EQ(deleted, 2);
  ExpectError([&] { AdoptHost(DType::Int64(), Shape{1}, buffer + 4, 8, deleter); }, StatusCode::kInvalidArgument,
              "aligned");
  EXPECT_EQ(deleted, 3);
  // A shape that is not concrete.
  ExpectError([&] { AdoptHost(DType::UInt8(), Shape{Dim::Unknown()}, buffer, 4, deleter); },
              StatusCode::kInvalidArgument, "not concrete");
  EXPECT_EQ(deleted, 4);
  ExpectError([&] { AdoptHost(DType::UInt8(), Shape{4}, nullptr, 4, deleter); }, StatusCode::kInvalidArgument,
              "NULL");
  EXPECT_EQ(deleted, 5);
  // Byte-sized dtypes accept any address.
  {
    TensorPtr t = AdoptHost(DType::UInt8(), Shape{3}, buffer + 1, 3, deleter);
    EXPECT_EQ(deleted, 5);
  }
  EXPECT_EQ(deleted, 6);
  // An empty deleter is allowed.
  {
    TensorPtr t = AdoptHost(DType::UInt8(), Shape{2}, buffer, 2, nullptr);
    EXPECT_EQ(t->numel(), 2);
  }
  EXPECT_EQ(deleted, 6);
}

TEST(Storage, AllocateAndAdopt) {
  const size_t before = CpuBytesInUse();
  {
    std::shared_ptr<Storage> s = Storage::Allocate(kCpu, 100);
    EXPECT_EQ(s->nbytes(), 100u);
    EXPECT_EQ(s->device(), kCpu);
    EXPECT_NE(s->data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % kCpuAlignment, 0u);
    EXPECT_EQ(CpuBytesInUse(), before + 100);
    std::memset(s->data(), 0xab, 100);  // the whole block is writable (ASan checks)
  }
  EXPECT_EQ(CpuBytesInUse(), before);
  int calls = 0;
  int value = 5;
  {
    auto s = Storage::Adopt(kCpu, &value, sizeof value, [&](void* p) {
      EXPECT_EQ(p, static_cast<void*>(&value));
      ++calls;
    });
    auto s2 = s;
    s.reset();
    EXPECT_EQ(calls, 0);
  }
  EXPECT_EQ(calls, 1);
}

// ---- Refcount, allocator accounting, alignment ---------------------------------------------

TEST(Tensor, IntrusiveRefcount) {
  TensorPtr a = Empty(DType::Float32(), Shape{4}, kCpu);
  EXPECT_EQ(a->refcount(), 1);
  {
    TensorPtr b = a;
    EXPECT_EQ(a->refcount(), 2);
    EXPECT_TRUE(a == b);
    TensorPtr c(b);
    EXPECT_EQ(a->refcount(), 3);
    TensorPtr d = std::move(c);
    EXPECT_EQ(a->refcount(), 3);  // a move does not retain
    EXPECT_FALSE(c);
    c = d;
    EXPECT_EQ(a->refcount(), 4);
    TensorPtr& alias = c;
    c = alias;  // self-assignment keeps the count
    EXPECT_EQ(a->refcount(), 4);
  }
  EXPECT_EQ(a->refcount(), 1);
  // Detach / Adopt hand one reference across, as the C ABI does.
  Tensor* raw = TensorPtr(a).Detach();
  EXPECT_EQ(a->refcount(), 2);
  raw->Retain();
  EXPECT_EQ(a->refcount(), 3);
  raw->Release();
  {
    TensorPtr adopted = TensorPtr::Adopt(raw);
    EXPECT_EQ(a->refcount(), 2);
  }
  EXPECT_EQ(a->refcount(), 1);
  TensorPtr other = Empty(DType::Float32(), Shape{4}, kCpu);
  EXPECT_FALSE(a == other);
}

TEST(Tensor, MemoryIsReturnedToTheAllocator) {
  Allocator& alloc = GetBackend(kCpu).allocator();
  const size_t start = alloc.bytes_in_use();
  {
    TensorPtr a = Empty(DType::Float32(), Shape{10, 10}, kCpu);
    EXPECT_EQ(alloc.bytes_in_use(), start + 400);
    EXPECT_GE(alloc.peak_bytes(), start + 400);
    TensorPtr b = Full(DType::Int64(), Shape{3}, 7, kCpu);
    EXPECT_EQ(alloc.bytes_in_use(), start + 424);
    TensorPtr a2 = a;
    a = nullptr;
    EXPECT_EQ(alloc.bytes_in_use(), start + 424);  // still referenced by a2
    const int32_t host[2] = {1, 2};
    TensorPtr c = FromHost(DType::Int32(), Shape{2}, host, 8, kCpu);
    Generator gen(3);
    TensorPtr r = Rand(gen, DType::Float64(), Shape{5}, kCpu);
    TensorPtr n = Randn(gen, DType::Float16(), Shape{5}, kCpu);
    TensorPtr ar = Arange(0, 4, 1, DType::Int16(), kCpu);
    EXPECT_EQ(alloc.bytes_in_use(), start + 424 + 8 + 40 + 10 + 8);
  }
  EXPECT_EQ(alloc.bytes_in_use(), start);
}

TEST(Tensor, AllocationsAre64ByteAligned) {
  std::vector<TensorPtr> keep;
  for (int64_t n : {0, 1, 3, 7, 63, 64, 65, 1000, 4097}) {
    for (Symbol<DType> d : {DType::Bool(), DType::Float16(), DType::Float64()}) {
      keep.push_back(Empty(d, Shape{n}, kCpu));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(keep.back()->raw_data()) % 64, 0u) << n << " " << d->name();
    }
  }
  EXPECT_EQ(kCpuAlignment, 64u);
  // Distinct live allocations do not overlap, even of zero bytes.
  for (size_t i = 1; i < keep.size(); ++i) EXPECT_NE(keep[i]->raw_data(), keep[i - 1]->raw_data());
}

// ---- Rand / Randn ------------------------------------------------------------------------------

TEST(Tensor, RandIsUniformInTheUnitInterval) {
  // n = 100000: the mean of U[0,1) has sd sqrt(1/12/n) = 0.0009, so 0.01 is > 10 sd; the variance
  // 1/12 = 0.0833 has sd ~ 0.0003 for this n, so 0.005 is > 15 sd.
  constexpr int64_t n = 100000;
  for (Symbol<DType> d : FloatingDTypes()) {
    SCOPED_TRACE(std::string(d->name()));
    Generator gen(1234);
    const TensorPtr t = Rand(gen, d, Shape{n}, kCpu);
    EXPECT_EQ(t->dtype().get(), d.get());
    const std::vector<double> v = ToDoubles(*t);
    double sum = 0, sq = 0, lo = 1, hi = 0;
    for (double x : v) {
      ASSERT_GE(x, 0.0);
      ASSERT_LT(x, 1.0);
      sum += x;
      sq += x * x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    EXPECT_NEAR(mean, 0.5, 0.01);
    EXPECT_NEAR(var, 1.0 / 12, 0.005);
    EXPECT_LT(lo, 0.01);
    EXPECT_GT(hi, 0.99);
  }
}

TEST(Tensor, RandnIsStandardNormal) {
  // n = 100000: the sample mean has sd 1/sqrt(n) = 0.0032 (tolerance 0.02 is > 6 sd); the sample
  // variance has sd sqrt(2/n) = 0.0045 (tolerance 0.03 is > 6 sd; 16-bit rounding adds < 0.001).
  constexpr int64_t n = 100000;
  for (Symbol<DType> d : FloatingDTypes()) {
    SCOPED_TRACE(std::string(d->name()));
    Generator gen(99);
    const std::vector<double> v = ToDoubles(*Randn(gen, d, Shape{n}, kCpu));
    double sum = 0, sq = 0;
    int beyond_2sd = 0;
    for (double x : v) {
      ASSERT_TRUE(std::isfinite(x));
      sum += x;
      sq += x * x;
      beyond_2sd += std::fabs(x) > 2;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    EXPECT_NEAR(mean, 0.0, 0.02);
    EXPECT_NEAR(var, 1.0, 0.03);
    // P(|x| > 2) = 0.0455; sd of the count is ~66, allow 1000.
    EXPECT_NEAR(beyond_2sd, 4550, 1000);
  }
}

TEST(Tensor, RandomIsReproducible) {
  for (Symbol<DType> d : FloatingDTypes()) {
    SCOPED_TRACE(std::string(d->name()));
    Generator g1(42), g2(42), g3(43);
    const std::vector<double> a = ToDoubles(*Rand(g1, d, Shape{64}, kCpu));
    const std::vector<double> b = ToDoubles(*Rand(g2, d, Shape{64}, kCpu));
    const std::vector<double> c = ToDoubles(*Rand(g3, d, Shape{64}, kCpu));
    EXPECT_EQ(a, b);  // same seed, same data
    EXPECT_NE(a, c);  // different seed, different data
    // The sequence moves on...
    const std::vector<double> a_next = ToDoubles(*Rand(g1, d, Shape{64}, kCpu));
    EXPECT_NE(a_next, a);
    // ...and ManualSeed restarts it.
    g1.ManualSeed(42);
    EXPECT_EQ(g1.seed(), 42u);
    EXPECT_EQ(ToDoubles(*Rand(g1, d, Shape{64}, kCpu)), a);
    EXPECT_EQ(ToDoubles(*Rand(g1, d, Shape{64}, kCpu)), a_next);
    g3.ManualSeed(42);
    EXPECT_EQ(ToDoubles(*Rand(g3, d, Shape{64}, kCpu)), a);
    Generator n1(7), n2(7);
    EXPECT_EQ(ToDoubles(*Randn(n1, d, Shape{3, 5}, kCpu)), ToDoubles(*Randn(n2, d, Shape{3, 5}, kCpu)));
  }
}

TEST(Tensor, RandomDependsOnlyOnSeedAndOrder) {
  // Element i comes from counter (offset + i): two draws of 10 equal one draw of 20.
  Generator split(5), whole(5);
  std::vector<double> parts = ToDoubles(*Rand(split, DType::Float32(), Shape{10}, kCpu));
  const std::vector<double> second = ToDoubles(*Rand(split, DType::Float32(), Shape{2, 5}, kCpu));
  parts.insert(parts.end(), second.begin(), second.end());
  EXPECT_EQ(parts, ToDoubles(*Rand(whole, DType::Float32(), Shape{20}, kCpu)));
}

TEST(Tensor, RandOnNonFloatingDTypesFails) {
  for (Symbol<DType> d : AllDTypes()) {
    if (d->is_floating_point()) continue;
    SCOPED_TRACE(std::string(d->name()));
    Generator gen(1);
    ExpectError([&] { Rand(gen, d, Shape{4}, kCpu); }, StatusCode::kInvalidArgument, "floating",
                std::string(d->name()));
    ExpectError([&] { Randn(gen, d, Shape{4}, kCpu); }, StatusCode::kInvalidArgument, "floating");
    // A failed call does not advance the generator.
    Generator fresh(1);
    EXPECT_EQ(ToDoubles(*Rand(gen, DType::Float32(), Shape{8}, kCpu)),
              ToDoubles(*Rand(fresh, DType::Float32(), Shape{8}, kCpu)));
  }
}

TEST(Tensor, FailedRandomCallsDoNotAdvanceTheGenerator) {
  Generator gen(8), fresh(8);
  const Dim n = Dim::NewSymbol("N");
  ExpectError([&] { Rand(gen, DType::Float32(), Shape{n}, kCpu); }, StatusCode::kInvalidArgument, "not concrete");
  ExpectDeviceUnavailable([&] { Randn(gen, DType::Float32(), Shape{4}, Device{DeviceType::kCUDA, 1000}); },
                          "cuda:1000");
  EXPECT_EQ(ToDoubles(*Rand(gen, DType::Float64(), Shape{8}, kCpu)),
            ToDoubles(*Rand(fresh, DType::Float64(), Shape{8}, kCpu)));
}

// ---- Arange -------------------------------------------------------------------------------------

TEST(Tensor, Arange) {
  struct Case {
    double start, end, step;
    Symbol<DType> dtype;
    std::vector<double> expected;
  };
  const Case cases[] = {
      {0, 5, 1, DType::Int64(), {0, 1, 2, 3, 4}},
      {0, 5, 1, DType::Float32(), {0, 1, 2, 3, 4}},
      {0, 1, 0.25, DType::Float64(), {0, 0.25, 0.5, 0.75}},
      {5, 0, -2, DType::Int32(), {5, 3, 1}},
      {-3, 3, 2, DType::Int8(), {-3, -1, 1}},
      {0, 6, 3, DType::UInt8(), {0, 3}},
      {2, 2, 1, DType::Int32(), {}},
      {0, 4, 1, DType::Float16(), {0, 1, 2, 3}},
      {0, 3, 1, DType::BFloat16(), {0, 1, 2}},
      {10, 13, 1, DType::Int16(), {10, 11, 12}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("arange({}, {}, {}) {}", c.start, c.end, c.step, c.dtype));
    const TensorPtr t = Arange(c.start, c.end, c.step, c.dtype, kCpu);
    EXPECT_EQ(t->dtype().get(), c.dtype.get());
    EXPECT_EQ(t->shape(), (Shape{static_cast<int64_t>(c.expected.size())}));
    EXPECT_EQ(ToDoubles(*t), c.expected);
  }
  // 0, 0.3, 0.6, 0.9: ceil(1 / 0.3) = 4 elements.
  const std::vector<double> v = ToDoubles(*Arange(0, 1, 0.3, DType::Float32(), kCpu));
  ASSERT_EQ(v.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(v[i], 0.3 * static_cast<double>(i), 1e-6);
}

TEST(Tensor, ArangeErrors) {
  ExpectError([] { Arange(0, 5, 0, DType::Float32(), kCpu); }, StatusCode::kInvalidArgument, "step", "zero");
  ExpectError([] { Arange(0, 5, -1, DType::Float32(), kCpu); }, StatusCode::kInvalidArgument, "5", "0", "-1");
  ExpectError([] { Arange(5, 0, 1, DType::Int32(), kCpu); }, StatusCode::kInvalidArgument, "cannot be reached");
  ExpectError([] { Arange(0, INFINITY, 1, DType::Float32(), kCpu); }, StatusCode::kInvalidArgument, "finite");
  ExpectError([] { Arange(NAN, 1, 1, DType::Float32(), kCpu); }, StatusCode::kInvalidArgument, "finite");
  ExpectError([] { Arange(0, 1, NAN, DType::Float32(), kCpu); }, StatusCode::kInvalidArgument, "finite");
  // Integer dtypes need integral values.
  ExpectError([] { Arange(0, 5, 0.5, DType::Int32(), kCpu); }, StatusCode::kInvalidArgument, "int");
  ExpectError([] { Arange(0.5, 5, 1, DType::Int64(), kCpu); }, StatusCode::kInvalidArgument, "0.5");
  ExpectError([] { Arange(0, 1, 0.5, DType::Int64(), kCpu); }, StatusCode::kInvalidArgument, "0.5");
  // Values must fit the dtype.
  ExpectError([] { Arange(0, 300, 1, DType::UInt8(), kCpu); }, StatusCode::kInvalidArgument, "299", "uint8");
  ExpectError([] { Arange(0, 2, 1, DType::Bool(), kCpu); }, StatusCode::kInvalidArgument, "bool");
}

// ---- Devices and backends -------------------------------------------------------------------

TEST(Device, CpuBackend) {
  Backend& b = GetBackend(kCpu);
  EXPECT_EQ(b.device(), kCpu);
  EXPECT_EQ(&GetBackend(Device::CPU()), &b);  // process-wide
  int src[3] = {1, 2, 3}, mid[3] = {}, dst[3] = {};
  b.CopyFromHost(mid, src, sizeof src);
  b.CopyToHost(dst, mid, sizeof mid);
  EXPECT_EQ(dst[2], 3);
  b.Synchronize();
}

// The reason cuda:0 cannot be used here, or "" when it can (a CUDA build on a machine with a GPU).
std::string CudaUnavailableReason() {
  try {
    GetBackend(Device{DeviceType::kCUDA, 0});
    return {};
  } catch (const Error& e) {
    return e.message();
  }
}

TEST(Device, UnavailableDevicesAreErrorsNotCrashes) {
  // No machine has a thousand and one GPUs, so this fails with or without CUDA.
  const Device far{DeviceType::kCUDA, 1000};
  ExpectDeviceUnavailable([&] { GetBackend(far); }, "cuda:1000");
  ExpectDeviceUnavailable([&] { Empty(DType::Float32(), Shape{2}, far); }, "cuda:1000");
  ExpectDeviceUnavailable([&] { Full(DType::Float32(), Shape{2}, 1, far); }, "cuda:1000");
  ExpectDeviceUnavailable([&] { Storage::Allocate(far, 16); }, "cuda:1000");
  ExpectError([] { GetBackend(Device{static_cast<DeviceType>(7), 0}); }, StatusCode::kInvalidArgument, "7");
  if (!BuiltWithCuda()) {
    ExpectDeviceUnavailable([] { GetBackend(Device{DeviceType::kCUDA, 0}); }, "cuda:0", "no CUDA backend");
  }
  const std::string reason = CudaUnavailableReason();
  if (!reason.empty()) {
    // Without a usable GPU every way onto cuda:0 says so.
    EXPECT_NE(reason.find("cuda:0"), std::string::npos) << reason;
    ExpectDeviceUnavailable([] { GetBackend(Device{DeviceType::kCUDA, 0}); }, "cuda:0");  // again, same answer
    ExpectDeviceUnavailable([] { Empty(DType::Float32(), Shape{2}, Device{DeviceType::kCUDA, 0}); }, "cuda:0");
    Generator gen(1);
    ExpectDeviceUnavailable([&] { Rand(gen, DType::Float32(), Shape{2}, Device{DeviceType::kCUDA, 0}); },
                            "cuda:0");
    const int64_t data[2] = {1, 2};
    ExpectDeviceUnavailable([&] { FromHost(DType::Int64(), Shape{2}, data, 16, Device{DeviceType::kCUDA, 0}); },
                            "cuda:0");
  }
}

// Runs only where cuda:0 works (skipped, with the reason, elsewhere).
TEST(Device, CudaTensors) {
  const std::string reason = CudaUnavailableReason();
  if (!reason.empty()) GTEST_SKIP() << "no usable CUDA device: " << reason;
  const Device gpu{DeviceType::kCUDA, 0};
  Backend& backend = GetBackend(gpu);
  EXPECT_EQ(backend.device(), gpu);
  EXPECT_EQ(&GetBackend(gpu), &backend);
  Allocator& alloc = backend.allocator();
  const size_t start = alloc.bytes_in_use();
  {
    const TensorPtr full = Full(DType::Float32(), Shape{3, 4}, 2.5, gpu);
    EXPECT_EQ(full->device(), gpu);
    EXPECT_EQ(alloc.bytes_in_use(), start + 48);
    EXPECT_EQ(ToDoubles(*full), std::vector<double>(12, 2.5));

    const std::vector<int64_t> host = {5, -6, 7, -8, 9};
    const TensorPtr from = FromHost(DType::Int64(), Shape{5}, host.data(), 40, gpu);
    std::vector<int64_t> back(5);
    CopyToHost(*from, back.data(), 40);
    EXPECT_EQ(back, host);

    EXPECT_EQ(ToDoubles(*Arange(5, 0, -2, DType::Int32(), gpu)), (std::vector<double>{5, 3, 1}));
    const TensorPtr empty = Empty(DType::Float16(), Shape{0, 3}, gpu);
    EXPECT_EQ(empty->numel(), 0);
    CopyToHost(*empty, nullptr, 0);

    // Random tensors depend only on the seed, not on the device.
    for (Symbol<DType> d : FloatingDTypes()) {
      Generator g_cpu(11), g_gpu(11);
      const TensorPtr c = Randn(g_cpu, d, Shape{257}, kCpu);
      const TensorPtr g = Randn(g_gpu, d, Shape{257}, gpu);
      std::vector<unsigned char> cb(c->nbytes()), gb(g->nbytes());
      CopyToHost(*c, cb.data(), cb.size());
      CopyToHost(*g, gb.data(), gb.size());
      EXPECT_EQ(cb, gb) << d->name();
    }
    backend.Synchronize();
  }
  EXPECT_EQ(alloc.bytes_in_use(), start);
  // Allocation failure is an error, not a crash: 2^50 bytes is more than any GPU holds.
  ExpectError([&] { Empty(DType::UInt8(), Shape{int64_t{1} << 50}, gpu); }, StatusCode::kResourceExhausted,
              "cuda:0");
  EXPECT_EQ(alloc.bytes_in_use(), start);
  // And the device is still usable afterwards.
  EXPECT_EQ(ToDoubles(*Full(DType::Int8(), Shape{2}, -3, gpu)), (std::vector<double>{-3, -3}));
}

TEST(Device, FromRawAndToString) {
  EXPECT_EQ(Device::FromRaw(1, 0), Device::CPU());
  EXPECT_EQ(Device::FromRaw(2, 3), (Device{DeviceType::kCUDA, 3}));
  EXPECT_EQ(Device::CPU().ToString(), "cpu");
  EXPECT_EQ((Device{DeviceType::kCUDA, 1}).ToString(), "cuda:1");
  EXPECT_EQ(fmt::format("{}", Device{DeviceType::kCUDA, 0}), "cuda:0");
  EXPECT_NE(Device::CPU(), (Device{DeviceType::kCUDA, 0}));
  ExpectError([] { Device::FromRaw(0, 0); }, StatusCode::kInvalidArgument, "device type 0");
  ExpectError([] { Device::FromRaw(3, 0); }, StatusCode::kInvalidArgument, "device type 3");
  ExpectError([] { Device::FromRaw(-1, 0); }, StatusCode::kInvalidArgument, "-1");
  ExpectError([] { Device::FromRaw(2, -1); }, StatusCode::kInvalidArgument, "negative", "-1");
  ExpectError([] { Device::FromRaw(1, 1); }, StatusCode::kInvalidArgument, "CPU", "1");
}

}  // namespace
}  // namespace oneflow

namespace oneflow {
namespace {

// Views over one 24-element float32 storage, by shape, strides and offset.
TensorPtr ViewOf(const TensorPtr& base, Shape shape, std::vector<int64_t> strides, int64_t offset = 0) {
  return Tensor::MakeView(*base, std::move(shape), std::move(strides), offset);
}

TEST(Tensor, InternalOverlap) {
  const TensorPtr base = Empty(DType::Float32(), Shape{24}, Device::CPU());
  EXPECT_FALSE(base->has_internal_overlap());
  EXPECT_FALSE(ViewOf(base, Shape{4, 6}, {6, 1})->has_internal_overlap());
  EXPECT_FALSE(ViewOf(base, Shape{6, 4}, {1, 6})->has_internal_overlap());      // transposed
  EXPECT_FALSE(ViewOf(base, Shape{3, 2}, {6, 2})->has_internal_overlap());      // strided, gaps
  EXPECT_FALSE(ViewOf(base, Shape{1, 5}, {0, 1})->has_internal_overlap());      // stride 0 on a size-1 dim
  EXPECT_FALSE(ViewOf(base, Shape{0, 5}, {0, 0})->has_internal_overlap());      // no elements
  EXPECT_TRUE(ViewOf(base, Shape{3, 4}, {0, 1})->has_internal_overlap());       // expanded rows
  EXPECT_TRUE(ViewOf(base, Shape{2, 4}, {2, 1})->has_internal_overlap());       // rows interleave
  EXPECT_TRUE(ViewOf(base, Shape{2, 2, 2}, {4, 1, 1})->has_internal_overlap());
}

TEST(Tensor, MayShareMemory) {
  const TensorPtr base = Empty(DType::Float32(), Shape{24}, Device::CPU());
  const TensorPtr other = Empty(DType::Float32(), Shape{24}, Device::CPU());
  const TensorPtr first = ViewOf(base, Shape{12}, {1}, 0);
  const TensorPtr second = ViewOf(base, Shape{12}, {1}, 12);
  EXPECT_FALSE(MayShareMemory(*first, *second));
  EXPECT_FALSE(MayShareMemory(*base, *other));
  EXPECT_TRUE(MayShareMemory(*base, *first));
  EXPECT_TRUE(MayShareMemory(*first, *ViewOf(base, Shape{2}, {1}, 11)));      // touches the last element
  EXPECT_FALSE(MayShareMemory(*first, *ViewOf(base, Shape{0}, {1}, 3)));      // empty
  EXPECT_TRUE(MayShareMemory(*ViewOf(base, Shape{6, 4}, {1, 6}), *second));   // a transpose spans it all
}

TEST(Tensor, VersionIsSharedByViews) {
  const TensorPtr base = Empty(DType::Float32(), Shape{4}, Device::CPU());
  const TensorPtr view = ViewOf(base, Shape{2}, {2}, 1);
  EXPECT_EQ(base->version(), 0u);
  view->MarkWritten();
  EXPECT_EQ(base->version(), 1u);
  EXPECT_EQ(base->Detach()->version(), 1u);
  EXPECT_EQ(Tensor::MakeLazy(1, 0, DType::Float32(), Shape{2}, Device::CPU())->version(), 0u);
}

}  // namespace
}  // namespace oneflow
