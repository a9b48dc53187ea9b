#include "core/common/dtype.h"

#include <array>

namespace oneflow {
namespace {

struct DTypeMeta {
  std::string_view name;
  size_t bytes;
  bool is_floating_point;
  bool is_signed;
  bool is_integer;
  DLPackDataType dlpack;
};

// Indexed by code. DLPack codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6.
constexpr std::array<DTypeMeta, kNumDataTypes> kMeta = {{
    {"invalid", 0, false, false, false, {0, 0, 0}},
    {"bool", 1, false, false, false, {6, 8, 1}},
    {"int8", 1, false, true, true, {0, 8, 1}},
    {"uint8", 1, false, false, true, {1, 8, 1}},
    {"int16", 2, false, true, true, {0, 16, 1}},
    {"int32", 4, false, true, true, {0, 32, 1}},
    {"int64", 8, false, true, true, {0, 64, 1}},
    {"float16", 2, true, true, false, {2, 16, 1}},
    {"bfloat16", 2, true, true, false, {4, 16, 1}},
    {"float32", 4, true, true, false, {2, 32, 1}},
    {"float64", 8, true, true, false, {2, 64, 1}},
}};

const DTypeMeta& Meta(DataType t) { return kMeta[static_cast<size_t>(t)]; }

// The one promotion table, indexed by code (row and column 0, invalid, are unused).
constexpr DataType b1 = DataType::kBool, i1 = DataType::kInt8, u1 = DataType::kUInt8,
                   i2 = DataType::kInt16, i4 = DataType::kInt32, i8 = DataType::kInt64,
                   f2 = DataType::kFloat16, bf = DataType::kBFloat16, f4 = DataType::kFloat32,
                   f8 = DataType::kFloat64, iv = DataType::kInvalid;
constexpr DataType kPromotion[kNumDataTypes][kNumDataTypes] = {
    //        iv  b1  i1  u1  i2  i4  i8  f2  bf  f4  f8
    /* iv */ {iv, iv, iv, iv, iv, iv, iv, iv, iv, iv, iv},
    /* b1 */ {iv, b1, i1, u1, i2, i4, i8, f2, bf, f4, f8},
    /* i1 */ {iv, i1, i1, i2, i2, i4, i8, f2, bf, f4, f8},
    /* u1 */ {iv, u1, i2, u1, i2, i4, i8, f2, bf, f4, f8},
    /* i2 */ {iv, i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
    /* i4 */ {iv, i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
    /* i8 */ {iv, i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
    /* f2 */ {iv, f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
    /* bf */ {iv, bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
    /* f4 */ {iv, f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
    /* f8 */ {iv, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
};

// All interned dtypes, built once (thread-safe static init); index = code.
const std::array<Symbol<DType>, kNumDataTypes>& AllDTypes() {
  static const std::array<Symbol<DType>, kNumDataTypes> all = [] {
    std::array<Symbol<DType>, kNumDataTypes> a{};
    for (int32_t c = 1; c < kNumDataTypes; ++c) a[c] = SymbolOf(DType(static_cast<DataType>(c)));
    return a;
  }();
  return all;
}

}  // namespace

Symbol<DType> DType::Get(int32_t code) {
  if (code <= 0 || code >= kNumDataTypes) {
    OF_THROW(NotFound) << "no dtype has code " << code << " (valid codes are 1.." << kNumDataTypes - 1
                       << ")";
  }
  return AllDTypes()[code];
}

Symbol<DType> DType::FromName(std::string_view name) {
  struct Alias {
    std::string_view name;
    DataType type;
  };
  static constexpr Alias kAliases[] = {{"float", DataType::kFloat32}, {"double", DataType::kFloat64},
                                       {"half", DataType::kFloat16},  {"long", DataType::kInt64},
                                       {"int", DataType::kInt32},     {"short", DataType::kInt16}};
  for (int32_t c = 1; c < kNumDataTypes; ++c) {
    if (kMeta[c].name == name) return AllDTypes()[c];
  }
  for (const Alias& a : kAliases) {
    if (a.name == name) return Get(a.type);
  }
  OF_THROW(NotFound) << "no dtype is named " << Quote(name);
}

Symbol<DType> DType::FromDLPack(DLPackDataType dl) {
  if (dl.lanes == 1) {
    for (int32_t c = 1; c < kNumDataTypes; ++c) {
      if (kMeta[c].dlpack == dl) return AllDTypes()[c];
    }
  }
  OF_THROW(NotFound) << "no dtype matches DLPack {code " << int(dl.code) << ", bits " << int(dl.bits)
                     << ", lanes " << dl.lanes << "}";
}

std::string_view DType::name() const { return Meta(type_).name; }
size_t DType::bytes() const { return Meta(type_).bytes; }
bool DType::is_floating_point() const { return Meta(type_).is_floating_point; }
bool DType::is_signed() const { return Meta(type_).is_signed; }
bool DType::is_integer() const { return Meta(type_).is_integer; }
DLPackDataType DType::dlpack() const { return Meta(type_).dlpack; }

Symbol<DType> PromoteTypes(Symbol<DType> a, Symbol<DType> b) {
  OF_CHECK(a && b) << "PromoteTypes: a dtype is null";
  return DType::Get(kPromotion[a->code()][b->code()]);
}

}  // namespace oneflow
