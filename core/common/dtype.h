// DType: the element type of a tensor, interned once per process.
//
// Symbol<DType> is one pointer; two dtypes are the same type exactly when their pointers are equal.
// DType::Get(code) and the named accessors (DType::Float32(), ...) always return the same Symbol for
// the same type, and the C ABI hands that pointer out as `const of_dtype_t*`.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "core/common/error.h"
#include "core/common/half.h"
#include "core/common/symbol.h"

namespace oneflow {

// Stable numeric codes (OF_DTYPE_* in the C ABI): append only, 0 is invalid.
enum class DataType : int32_t {
  kInvalid = 0,
  kBool = 1,
  kInt8 = 2,
  kUInt8 = 3,
  kInt16 = 4,
  kInt32 = 5,
  kInt64 = 6,
  kFloat16 = 7,
  kBFloat16 = 8,
  kFloat32 = 9,
  kFloat64 = 10,
};
inline constexpr int32_t kNumDataTypes = 11;  // one past the largest code

// DLPack's DLDataType, spelled here so that core/ needs no dlpack.h.
struct DLPackDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
  friend bool operator==(const DLPackDataType&, const DLPackDataType&) = default;
};

class DType {
 public:
  // The interned dtype with this code; NotFound for a code that names no dtype (0 included).
  static Symbol<DType> Get(int32_t code);
  static Symbol<DType> Get(DataType type) { return Get(static_cast<int32_t>(type)); }
  // By name ("float32", also the aliases "float", "double", "half", "long", "int", "short");
  // NotFound otherwise.
  static Symbol<DType> FromName(std::string_view name);
  // From DLPack's {code, bits, lanes}; lanes must be 1. NotFound when no dtype matches.
  static Symbol<DType> FromDLPack(DLPackDataType dl);

  static Symbol<DType> Bool() { return Get(DataType::kBool); }
  static Symbol<DType> Int8() { return Get(DataType::kInt8); }
  static Symbol<DType> UInt8() { return Get(DataType::kUInt8); }
  static Symbol<DType> Int16() { return Get(DataType::kInt16); }
  static Symbol<DType> Int32() { return Get(DataType::kInt32); }
  static Symbol<DType> Int64() { return Get(DataType::kInt64); }
  static Symbol<DType> Float16() { return Get(DataType::kFloat16); }
  static Symbol<DType> BFloat16() { return Get(DataType::kBFloat16); }
  static Symbol<DType> Float32() { return Get(DataType::kFloat32); }
  static Symbol<DType> Float64() { return Get(DataType::kFloat64); }

  DataType data_type() const { return type_; }
  int32_t code() const { return static_cast<int32_t>(type_); }
  std::string_view name() const;  // "float32", "int64", "bool", ...
  size_t bytes() const;
  bool is_floating_point() const;  // float16, bfloat16, float32, float64
  bool is_half() const { return type_ == DataType::kFloat16 || type_ == DataType::kBFloat16; }
  bool is_signed() const;          // can hold negative values: signed integers and floats
  bool is_integer() const;         // int8 .. int64 and uint8 (bool is not an integer)
  bool is_complex() const { return false; }  // no complex dtype yet; the predicate is part of the ABI
  bool is_bool() const { return type_ == DataType::kBool; }
  DLPackDataType dlpack() const;

  friend bool operator==(const DType& a, const DType& b) { return a.type_ == b.type_; }

  // Public for Symbol<DType> interning only; use Get().
  explicit DType(DataType type) : type_(type) {}

 private:
  DataType type_;
};

// The dtype of a binary op's result on operands of types a and b (PyTorch's table for these types):
// bool < integers < floats; a signed and an unsigned integer widen to the next signed type that holds
// both (uint8 with int8 is int16); float16 with bfloat16 is float32.
Symbol<DType> PromoteTypes(Symbol<DType> a, Symbol<DType> b);

// The C++ type that stores elements of each DataType.
template <DataType>
struct DataTypeToCpp;
template <> struct DataTypeToCpp<DataType::kBool> { using type = bool; };
template <> struct DataTypeToCpp<DataType::kInt8> { using type = int8_t; };
template <> struct DataTypeToCpp<DataType::kUInt8> { using type = uint8_t; };
template <> struct DataTypeToCpp<DataType::kInt16> { using type = int16_t; };
template <> struct DataTypeToCpp<DataType::kInt32> { using type = int32_t; };
template <> struct DataTypeToCpp<DataType::kInt64> { using type = int64_t; };
template <> struct DataTypeToCpp<DataType::kFloat16> { using type = float16; };
template <> struct DataTypeToCpp<DataType::kBFloat16> { using type = bfloat16; };
template <> struct DataTypeToCpp<DataType::kFloat32> { using type = float; };
template <> struct DataTypeToCpp<DataType::kFloat64> { using type = double; };

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the C++ element type of `dtype`:
//   VisitDType(t.dtype(), [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename Fn>
decltype(auto) VisitDType(Symbol<DType> dtype, Fn&& fn) {
  switch (dtype->data_type()) {
    case DataType::kBool: return fn(TypeTag<bool>{});
    case DataType::kInt8: return fn(TypeTag<int8_t>{});
    case DataType::kUInt8: return fn(TypeTag<uint8_t>{});
    case DataType::kInt16: return fn(TypeTag<int16_t>{});
    case DataType::kInt32: return fn(TypeTag<int32_t>{});
    case DataType::kInt64: return fn(TypeTag<int64_t>{});
    case DataType::kFloat16: return fn(TypeTag<float16>{});
    case DataType::kBFloat16: return fn(TypeTag<bfloat16>{});
    case DataType::kFloat32: return fn(TypeTag<float>{});
    case DataType::kFloat64: return fn(TypeTag<double>{});
    case DataType::kInvalid: break;
  }
  OF_THROW(Internal) << "VisitDType: invalid dtype code " << dtype->code();
}

}  // namespace oneflow

template <>
struct std::hash<oneflow::DType> {
  size_t operator()(const oneflow::DType& d) const noexcept { return std::hash<int32_t>()(d.code()); }
};

template <>
struct fmt::formatter<oneflow::Symbol<oneflow::DType>> : fmt::formatter<std::string_view> {
  auto format(oneflow::Symbol<oneflow::DType> d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(d ? d->name() : std::string_view("<null dtype>"), ctx);
  }
};
