// Dtype handles and dims.
#include "capi/src/capi_internal.h"

using namespace oneflow;
using capi::Guard;
using capi::Require;
using capi::Unwrap;
using capi::Wrap;

extern "C" {

const of_dtype_t* of_dtype_bool(void) { return Wrap(DType::Bool()); }
const of_dtype_t* of_dtype_int8(void) { return Wrap(DType::Int8()); }
const of_dtype_t* of_dtype_uint8(void) { return Wrap(DType::UInt8()); }
const of_dtype_t* of_dtype_int16(void) { return Wrap(DType::Int16()); }
const of_dtype_t* of_dtype_int32(void) { return Wrap(DType::Int32()); }
const of_dtype_t* of_dtype_int64(void) { return Wrap(DType::Int64()); }
const of_dtype_t* of_dtype_float16(void) { return Wrap(DType::Float16()); }
const of_dtype_t* of_dtype_bfloat16(void) { return Wrap(DType::BFloat16()); }
const of_dtype_t* of_dtype_float32(void) { return Wrap(DType::Float32()); }
const of_dtype_t* of_dtype_float64(void) { return Wrap(DType::Float64()); }

of_status_t* of_dtype_from_code(int32_t code, const of_dtype_t** out_dtype) {
  return Guard(__func__, [&] {
    Require(out_dtype, "out_dtype");
    *out_dtype = Wrap(DType::Get(code));
  });
}

of_status_t* of_dtype_from_name(const char* name, const of_dtype_t** out_dtype) {
  return Guard(__func__, [&] {
    Require(name, "name");
    Require(out_dtype, "out_dtype");
    *out_dtype = Wrap(DType::FromName(name));
  });
}

of_status_t* of_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, const of_dtype_t** out_dtype) {
  return Guard(__func__, [&] {
    Require(out_dtype, "out_dtype");
    *out_dtype = Wrap(DType::FromDLPack(DLPackDataType{code, bits, lanes}));
  });
}

of_status_t* of_dtype_to_dlpack(const of_dtype_t* dtype, uint8_t* out_code, uint8_t* out_bits,
                                uint16_t* out_lanes) {
  return Guard(__func__, [&] {
    const DLPackDataType dl = Unwrap(dtype)->dlpack();
    Require(out_code, "out_code");
    Require(out_bits, "out_bits");
    Require(out_lanes, "out_lanes");
    *out_code = dl.code;
    *out_bits = dl.bits;
    *out_lanes = dl.lanes;
  });
}

of_status_t* of_dtype_promote(const of_dtype_t* a, const of_dtype_t* b, const of_dtype_t** out_dtype) {
  return Guard(__func__, [&] {
    Symbol<DType> da = Unwrap(a, "a"), db = Unwrap(b, "b");
    Require(out_dtype, "out_dtype");
    *out_dtype = Wrap(PromoteTypes(da, db));
  });
}

// Attribute getters: infallible, with the documented result for NULL.
#define OF_DTYPE_GETTER(ret, name, expr, null_value)                             \
  ret of_dtype_##name(const of_dtype_t* dtype) {                                 \
    if (dtype == nullptr) return null_value;                                     \
    const DType& d = *reinterpret_cast<const DType*>(dtype);                     \
    return expr;                                                                 \
  }
OF_DTYPE_GETTER(int32_t, code, d.code(), OF_DTYPE_INVALID)
OF_DTYPE_GETTER(const char*, name, d.name().data(), "")  // the names are string literals
OF_DTYPE_GETTER(size_t, size, d.bytes(), 0)
OF_DTYPE_GETTER(int32_t, is_floating_point, d.is_floating_point(), 0)
OF_DTYPE_GETTER(int32_t, is_signed, d.is_signed(), 0)
OF_DTYPE_GETTER(int32_t, is_integer, d.is_integer(), 0)
OF_DTYPE_GETTER(int32_t, is_complex, d.is_complex(), 0)
#undef OF_DTYPE_GETTER

int32_t of_dim_is_known(int64_t dim) { return dim >= 0; }

int32_t of_dim_is_symbol(int64_t dim) {
  try {
    return Dim::FromRaw(dim, "dim").is_symbol();
  } catch (...) {
    return 0;
  }
}

of_status_t* of_dim_symbol_name(int64_t dim, const char** out_name, size_t* out_length) {
  return Guard(__func__, [&] {
    const Dim d = Dim::FromRaw(dim, "dim");
    OF_CHECK(d.is_symbol()) << "dim " << d << " is not a named symbol";
    Require(out_name, "out_name");
    Require(out_length, "out_length");
    const std::string_view name = d.symbol_name();  // NUL-terminated: the registry holds std::strings
    *out_name = name.data();
    *out_length = name.size();
  });
}

}  // extern "C"
