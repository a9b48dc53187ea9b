// Dim: one dimension of a shape, which may be symbolic.
//
// A Dim is one int64_t (so a Shape's dims form an int64_t array that C callers read directly):
//   value >= 0                       a known size
//   INT64_MIN (OF_DIM_UNKNOWN)       unknown (MLIR's kDynamic has the same value)
//   INT64_MIN + k, 1 <= k < 2^31     the named symbol number k ("N", "seq"), see Dim::NewSymbol
// Every other negative value is invalid: constructing a Dim from it is an InvalidArgument error, so a
// negative size computed during shape inference is reported instead of stored.
//
// Semantics, chosen so that shape inference written with Dim needs no special cases:
//  * Arithmetic: known op known is the usual integer result. If an operand is not known the result is
//    unknown, except for the identities x*1 = x, x*0 = 0, x+0 = x, x-0 = x, x/1 = x.
//  * Equality (==) compares encodings: unknown == unknown holds (so containers and Shape equality
//    work), a named symbol equals only itself, a symbol never equals unknown or a number. Use
//    ProvablyEqual() when "certainly the same size at run time" is meant.
//  * Ordering (<, <=, >, >=) holds only between two known dims; anything else compares false.
//  * Converting a Dim that is not known to an integer (implicitly or with value()) is an
//    InvalidArgument error naming the dim; kernels only ever see concrete shapes.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace oneflow {

class Dim {
 public:
  static constexpr int64_t kUnknownValue = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kMaxSymbols = int64_t{1} << 31;
  static constexpr size_t kMaxSymbolName = 256;  // bytes

  constexpr Dim() = default;  // unknown
  Dim(int64_t value) : value_(value) { Validate(value); }  // NOLINT: sizes convert implicitly
  template <std::integral T>
  Dim(T value) : Dim(CheckedInt64(value)) {}  // NOLINT

  static constexpr Dim Unknown() { return Dim(); }
  // A new named symbol (name: non-empty UTF-8 of at most kMaxSymbolName bytes, no control characters,
  // not "?", not starting with a digit), distinct from every other symbol in the process (two calls with the same
  // name give two symbols; sessions keep name -> symbol tables). `owner` is recorded for messages and
  // checks (a session's id; 0 for none). Thread-safe.
  static Dim NewSymbol(std::string_view name, uint64_t owner = 0);
  // Rebuilds a Dim from its encoding; InvalidArgument naming `what` if the encoding is invalid or a
  // symbol number that was never created.
  static Dim FromRaw(int64_t raw, std::string_view what);

  bool is_known() const { return value_ >= 0; }
  bool is_unknown() const { return value_ == kUnknownValue; }
  bool is_symbol() const { return !is_known() && !is_unknown(); }
  int64_t raw() const { return value_; }  // the encoding, never throws
  int64_t value() const;                  // the size; InvalidArgument unless is_known()
  operator int64_t() const { return value(); }  // NOLINT: see the header comment
  int64_t value_or(int64_t fallback) const { return is_known() ? value_ : fallback; }
  std::string_view symbol_name() const;  // the symbol's name; "" unless is_symbol()
  uint64_t symbol_owner() const;          // the owner given to NewSymbol; 0 unless is_symbol()
  std::string ToString() const;          // "5", "?" or the symbol's name

  static bool ProvablyEqual(Dim a, Dim b) { return a.is_unknown() ? false : a.value_ == b.value_; }

  friend bool operator==(Dim a, Dim b) { return a.value_ == b.value_; }
  template <std::integral T>
  friend bool operator==(Dim a, T b) {
    return a.is_known() && a.value_ == static_cast<int64_t>(b);
  }
#define OF_DIM_ORDER(op)                                                          \
  friend bool operator op(Dim a, Dim b) {                                         \
    return a.is_known() && b.is_known() && a.value_ op b.value_;                  \
  }                                                                               \
  template <std::integral T>                                                      \
  friend bool operator op(Dim a, T b) {                                           \
    return a.is_known() && a.value_ op static_cast<int64_t>(b);                   \
  }                                                                               \
  template <std::integral T>                                                      \
  friend bool operator op(T a, Dim b) {                                           \
    return b.is_known() && static_cast<int64_t>(a) op b.value_;                   \
  }
  OF_DIM_ORDER(<)
  OF_DIM_ORDER(<=)
  OF_DIM_ORDER(>)
  OF_DIM_ORDER(>=)
#undef OF_DIM_ORDER

  friend Dim operator+(Dim a, Dim b);
  friend Dim operator-(Dim a, Dim b);
  friend Dim operator*(Dim a, Dim b);
  friend Dim operator/(Dim a, Dim b);  // floor division of non-negative sizes; x/0 is an error
  friend Dim operator%(Dim a, Dim b);
#define OF_DIM_ARITH(op)                                                                          \
  template <std::integral T>                                                                      \
  friend Dim operator op(Dim a, T b) { return a op Dim(static_cast<int64_t>(b)); }                \
  template <std::integral T>                                                                      \
  friend Dim operator op(T a, Dim b) { return Dim(static_cast<int64_t>(a)) op b; }                \
  Dim& operator op##=(Dim b) { return *this = *this op b; }
  OF_DIM_ARITH(+)
  OF_DIM_ARITH(-)
  OF_DIM_ARITH(*)
  OF_DIM_ARITH(/)
  OF_DIM_ARITH(%)
#undef OF_DIM_ARITH

 private:
  static void Validate(int64_t value) {
    // Valid negatives are exactly [kUnknownValue, kUnknownValue + kMaxSymbols).
    if (value < 0 && value >= kUnknownValue + kMaxSymbols) ThrowNegative(value);
  }
  [[noreturn]] static void ThrowNegative(int64_t value);
  [[noreturn]] static void ThrowTooLarge(uint64_t value);
  template <std::integral T>
  static int64_t CheckedInt64(T value) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      if (value > static_cast<T>(std::numeric_limits<int64_t>::max())) ThrowTooLarge(value);
    }
    return static_cast<int64_t>(value);
  }

  int64_t value_ = kUnknownValue;
};

static_assert(sizeof(Dim) == sizeof(int64_t));

}  // namespace oneflow

template <>
struct std::hash<oneflow::Dim> {
  size_t operator()(oneflow::Dim d) const noexcept { return std::hash<int64_t>()(d.raw()); }
};

template <>
struct fmt::formatter<oneflow::Dim> : fmt::formatter<std::string_view> {
  auto format(oneflow::Dim d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(d.ToString(), ctx);
  }
};
