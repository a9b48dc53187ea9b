// DType: codes, metadata, DLPack mapping, interning identity, promotion, VisitDType.
#include "core/common/dtype.h"

#include <array>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/core/test_util.h"

namespace oneflow {
namespace {

using testing::ExpectError;

// The expected facts, written out independently of dtype.cpp's table.
struct Expected {
  int32_t code;
  const char* name;
  size_t bytes;
  bool is_floating_point, is_signed, is_integer, is_complex, is_bool;
  uint8_t dl_code, dl_bits;
  uint16_t dl_lanes;
  Symbol<DType> (*accessor)();
};

constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6;

const std::array<Expected, 10> kExpected = {{
    //  code name        bytes  fp     signed integer complex bool   DLPack
    {1, "bool", 1, false, false, false, false, true, kDLBool, 8, 1, &DType::Bool},
    {2, "int8", 1, false, true, true, false, false, kDLInt, 8, 1, &DType::Int8},
    {3, "uint8", 1, false, false, true, false, false, kDLUInt, 8, 1, &DType::UInt8},
    {4, "int16", 2, false, true, true, false, false, kDLInt, 16, 1, &DType::Int16},
    {5, "int32", 4, false, true, true, false, false, kDLInt, 32, 1, &DType::Int32},
    {6, "int64", 8, false, true, true, false, false, kDLInt, 64, 1, &DType::Int64},
    {7, "float16", 2, true, true, false, false, false, kDLFloat, 16, 1, &DType::Float16},
    {8, "bfloat16", 2, true, true, false, false, false, kDLBfloat, 16, 1, &DType::BFloat16},
    {9, "float32", 4, true, true, false, false, false, kDLFloat, 32, 1, &DType::Float32},
    {10, "float64", 8, true, true, false, false, false, kDLFloat, 64, 1, &DType::Float64},
}};

TEST(DType, MetadataTable) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const Symbol<DType> d = DType::Get(e.code);
    ASSERT_TRUE(static_cast<bool>(d));
    EXPECT_EQ(d->code(), e.code);
    EXPECT_EQ(static_cast<int32_t>(d->data_type()), e.code);
    EXPECT_EQ(d->name(), e.name);
    EXPECT_EQ(d->bytes(), e.bytes);
    EXPECT_EQ(d->is_floating_point(), e.is_floating_point);
    EXPECT_EQ(d->is_signed(), e.is_signed);
    EXPECT_EQ(d->is_integer(), e.is_integer);
    EXPECT_EQ(d->is_complex(), e.is_complex);
    EXPECT_EQ(d->is_bool(), e.is_bool);
    EXPECT_EQ(d->is_half(), e.is_floating_point && e.bytes == 2);  // float16, bfloat16
    const DLPackDataType dl = d->dlpack();
    EXPECT_EQ(dl.code, e.dl_code);
    EXPECT_EQ(dl.bits, e.dl_bits);
    EXPECT_EQ(dl.lanes, e.dl_lanes);
    EXPECT_EQ(dl.bits, e.bytes * 8);
    EXPECT_EQ(fmt::format("{}", d), e.name);
  }
  EXPECT_EQ(kNumDataTypes, 11);
  EXPECT_EQ(fmt::format("{}", Symbol<DType>()), "<null dtype>");
}

TEST(DType, GetAndAccessorsArePointerIdentical) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const Symbol<DType> by_code = DType::Get(e.code);
    const Symbol<DType> by_enum = DType::Get(static_cast<DataType>(e.code));
    const Symbol<DType> by_accessor = e.accessor();
    EXPECT_EQ(by_code.get(), by_accessor.get());
    EXPECT_EQ(by_enum.get(), by_accessor.get());
    EXPECT_EQ(DType::Get(e.code).get(), by_code.get());  // stable on repeated calls
    // Interning a fresh DType value finds the same object.
    EXPECT_EQ(SymbolOf(DType(static_cast<DataType>(e.code))).get(), by_code.get());
  }
  // All ten are distinct objects.
  for (size_t i = 0; i < kExpected.size(); ++i) {
    for (size_t j = i + 1; j < kExpected.size(); ++j) {
      EXPECT_NE(DType::Get(kExpected[i].code).get(), DType::Get(kExpected[j].code).get());
    }
  }
}

TEST(DType, GetFromManyThreads) {
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::vector<std::array<const DType*, 11>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int rep = 0; rep < 200; ++rep) {
        for (int32_t c = 1; c <= 10; ++c) {
          const int32_t code = (c + t + rep) % 10 + 1;
          const DType* p = DType::Get(code).get();
          auto& slot = got[static_cast<size_t>(t)][static_cast<size_t>(code)];
          if (slot == nullptr) slot = p;
          if (slot != p) slot = reinterpret_cast<const DType*>(uintptr_t{1});  // a mismatch marker
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int32_t c = 1; c <= 10; ++c) {
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(got[static_cast<size_t>(t)][static_cast<size_t>(c)], DType::Get(c).get())
          << "thread " << t << " code " << c;
    }
  }
}

TEST(DType, InvalidCodesAreNotFound) {
  for (int32_t code : {0, -1, 11, 1000, std::numeric_limits<int32_t>::min()}) {
    SCOPED_TRACE(code);
    ExpectError([&] { DType::Get(code); }, StatusCode::kNotFound, std::to_string(code));
  }
  ExpectError([] { DType::Get(DataType::kInvalid); }, StatusCode::kNotFound, "0");
}

TEST(DType, FromName) {
  for (const Expected& e : kExpected) {
    EXPECT_EQ(DType::FromName(e.name).get(), e.accessor().get()) << e.name;
  }
  EXPECT_EQ(DType::FromName("float").get(), DType::Float32().get());
  EXPECT_EQ(DType::FromName("double").get(), DType::Float64().get());
  EXPECT_EQ(DType::FromName("half").get(), DType::Float16().get());
  EXPECT_EQ(DType::FromName("long").get(), DType::Int64().get());
  EXPECT_EQ(DType::FromName("int").get(), DType::Int32().get());
  EXPECT_EQ(DType::FromName("short").get(), DType::Int16().get());
  for (const char* bad : {"float31", "Float32", "", "invalid", "float32 ", "complex64"}) {
    SCOPED_TRACE(bad);
    ExpectError([&] { DType::FromName(bad); }, StatusCode::kNotFound, fmt::format("'{}'", bad));
  }
}

TEST(DType, FromDLPack) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(DType::FromDLPack(DLPackDataType{e.dl_code, e.dl_bits, 1}).get(), e.accessor().get());
    EXPECT_EQ(DType::FromDLPack(e.accessor()->dlpack()).get(), e.accessor().get());
    for (uint16_t lanes : {0, 2, 4}) {
      ExpectError([&] { DType::FromDLPack(DLPackDataType{e.dl_code, e.dl_bits, lanes}); },
                  StatusCode::kNotFound, fmt::format("lanes {}", lanes));
    }
  }
  const DLPackDataType unknown[] = {
      {kDLInt, 128, 1},    // no int128
      {kDLUInt, 16, 1},    // no uint16
      {kDLUInt, 64, 1},    // no uint64
      {kDLFloat, 8, 1},    // no float8
      {kDLBfloat, 32, 1},  // bfloat is 16 bits only
      {kDLBool, 1, 1},     // bool is stored in a byte
      {3, 16, 1},          // kDLOpaqueHandle
      {5, 64, 1},          // kDLComplex
      {kDLInt, 0, 1},
  };
  for (const DLPackDataType& dl : unknown) {
    SCOPED_TRACE(fmt::format("code {} bits {}", dl.code, dl.bits));
    ExpectError([&] { DType::FromDLPack(dl); }, StatusCode::kNotFound,
                fmt::format("code {}, bits {}", dl.code, dl.bits));
  }
}

// PyTorch's promotion rules, written out by hand. Order: b1 i1 u1 i2 i4 i8 f2 bf f4 f8.
TEST(DType, PromoteTypesEveryPair) {
  const char* kNames[10] = {"bool", "int8", "uint8", "int16", "int32", "int64",
                            "float16", "bfloat16", "float32", "float64"};
  const char* kTable[10][10] = {
      // bool      int8       uint8      int16      int32      int64      float16    bfloat16    float32    float64
      {"bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"},
      {"int8", "int8", "int16", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"},
      {"uint8", "int16", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"},
      {"int16", "int16", "int16", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"},
      {"int32", "int32", "int32", "int32", "int32", "int64", "float16", "bfloat16", "float32", "float64"},
      {"int64", "int64", "int64", "int64", "int64", "int64", "float16", "bfloat16", "float32", "float64"},
      {"float16", "float16", "float16", "float16", "float16", "float16", "float16", "float32", "float32", "float64"},
      {"bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "float32", "bfloat16", "float32", "float64"},
      {"float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float64"},
      {"float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64"},
  };
  int checked = 0;
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 10; ++j) {
      const Symbol<DType> a = DType::FromName(kNames[i]), b = DType::FromName(kNames[j]);
      const Symbol<DType> r = PromoteTypes(a, b);
      EXPECT_EQ(r->name(), kTable[i][j]) << kNames[i] << " with " << kNames[j];
      EXPECT_EQ(r.get(), DType::FromName(kTable[i][j]).get());  // the interned object itself
      EXPECT_EQ(r.get(), PromoteTypes(b, a).get()) << "asymmetric: " << kNames[i] << ", " << kNames[j];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 100);
  // The hand table itself is symmetric (guards against a typo in one half).
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 10; ++j) EXPECT_STREQ(kTable[i][j], kTable[j][i]) << i << "," << j;
  }
}

TEST(DType, PromoteTypesNullIsAnError) {
  ExpectError([] { PromoteTypes(Symbol<DType>(), DType::Float32()); }, StatusCode::kInvalidArgument, "null");
  ExpectError([] { PromoteTypes(DType::Int8(), Symbol<DType>()); }, StatusCode::kInvalidArgument, "null");
}

template <typename Expect>
void ExpectVisit(Symbol<DType> d) {
  SCOPED_TRACE(std::string(d->name()));
  const size_t size = VisitDType(d, [](auto tag) {
    using T = typename decltype(tag)::type;
    EXPECT_TRUE((std::is_same_v<T, Expect>));
    return sizeof(T);
  });
  EXPECT_EQ(size, d->bytes());
  EXPECT_TRUE((std::is_same_v<typename DataTypeToCpp<DataType::kBool>::type, bool>));
}

TEST(DType, VisitDTypeMapsToCppTypes) {
  ExpectVisit<bool>(DType::Bool());
  ExpectVisit<int8_t>(DType::Int8());
  ExpectVisit<uint8_t>(DType::UInt8());
  ExpectVisit<int16_t>(DType::Int16());
  ExpectVisit<int32_t>(DType::Int32());
  ExpectVisit<int64_t>(DType::Int64());
  ExpectVisit<float16>(DType::Float16());
  ExpectVisit<bfloat16>(DType::BFloat16());
  ExpectVisit<float>(DType::Float32());
  ExpectVisit<double>(DType::Float64());
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kInt8>::type, int8_t>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kUInt8>::type, uint8_t>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kInt16>::type, int16_t>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kInt32>::type, int32_t>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kInt64>::type, int64_t>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kFloat16>::type, float16>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kBFloat16>::type, bfloat16>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kFloat32>::type, float>);
  static_assert(std::is_same_v<DataTypeToCpp<DataType::kFloat64>::type, double>);
  static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);
}

TEST(DType, VisitDTypeOnTheInvalidDTypeIsAnErrorNotACrash) {
  // A DType with code 0 cannot come from Get(), but one can be interned by hand.
  const Symbol<DType> invalid = SymbolOf(DType(DataType::kInvalid));
  ExpectError([&] { VisitDType(invalid, [](auto) {}); }, StatusCode::kInternal, "0");
}

}  // namespace
}  // namespace oneflow
