#include "core/common/dim.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <string>

#include "core/common/error.h"
#include "core/common/utf8.h"

namespace oneflow {
namespace {

// Symbol number k lives at names[k - 1]. A deque never moves its elements, so the string_views
// handed out by symbol_name() stay valid for the life of the process.
struct SymbolRegistry {
  std::mutex mutex;
  std::deque<std::string> names;
  std::deque<uint64_t> owners;  // parallel to names: the owner given to NewSymbol
};

SymbolRegistry& Registry() {
  static auto* registry = new SymbolRegistry();  // leaked on purpose: usable during static teardown
  return *registry;
}

int64_t SymbolNumber(int64_t raw) { return raw - Dim::kUnknownValue; }

}  // namespace

Dim Dim::NewSymbol(std::string_view name, uint64_t owner) {
  OF_CHECK(!name.empty()) << "a named dim symbol needs a non-empty name";
  OF_CHECK(name != "?") << "'?' is the printed form of an unknown dim and cannot name a symbol";
  OF_CHECK(!(name[0] >= '0' && name[0] <= '9')) << "dim symbol name " << Quote(name) << " must not start with a digit";
  // Symbols print inside shapes and messages: a short UTF-8 identifier, no control characters.
  OF_CHECK(name.size() <= kMaxSymbolName) << "dim symbol name " << Quote(name) << " is longer than " << kMaxSymbolName
                                          << " bytes";
  OF_CHECK(IsValidUtf8(name) && std::none_of(name.begin(), name.end(), [](char c) {
             return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
           }))
      << "dim symbol name " << Quote(name) << " must be UTF-8 text without control characters";
  SymbolRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (static_cast<int64_t>(r.names.size()) + 1 >= kMaxSymbols) {
    OF_THROW(ResourceExhausted) << "too many dim symbols (at most " << kMaxSymbols - 1 << ")";
  }
  r.names.emplace_back(name);
  r.owners.push_back(owner);
  Dim d;
  d.value_ = kUnknownValue + static_cast<int64_t>(r.names.size());
  return d;
}

Dim Dim::FromRaw(int64_t raw, std::string_view what) {
  if (raw >= 0 || raw == kUnknownValue) return Dim(raw);
  if (raw < kUnknownValue + kMaxSymbols) {
    SymbolRegistry& r = Registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (SymbolNumber(raw) <= static_cast<int64_t>(r.names.size())) return Dim(raw);
    OF_THROW(InvalidArgument) << what << " is " << raw
                              << ", which looks like a dim symbol but no such symbol was created";
  }
  OF_THROW(InvalidArgument) << what << " is " << raw
                            << ": sizes must be >= 0 (or OF_DIM_UNKNOWN, or a named dim symbol)";
}

void Dim::ThrowNegative(int64_t value) {
  OF_THROW(InvalidArgument) << "dimension size " << value << " is negative";
}

void Dim::ThrowTooLarge(uint64_t value) {
  OF_THROW(OutOfRange) << "dimension size " << value << " does not fit in int64";
}

int64_t Dim::value() const {
  if (is_known()) return value_;
  OF_THROW(InvalidArgument) << "dimension " << ToString()
                            << " is not known here; a concrete size is required";
}

uint64_t Dim::symbol_owner() const {
  if (!is_symbol()) return 0;
  SymbolRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const int64_t k = SymbolNumber(value_);
  return k > static_cast<int64_t>(r.owners.size()) ? 0 : r.owners[static_cast<size_t>(k - 1)];
}

std::string_view Dim::symbol_name() const {
  if (!is_symbol()) return {};
  SymbolRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const int64_t k = SymbolNumber(value_);
  if (k > static_cast<int64_t>(r.names.size())) return "<invalid symbol>";
  return r.names[k - 1];
}

std::string Dim::ToString() const {
  if (is_known()) return std::to_string(value_);
  if (is_unknown()) return "?";
  return std::string(symbol_name());
}

namespace {
// The result of known op known. A negative result is an error even when its value happens to be the
// encoding of unknown or of a symbol (0 - INT64_MAX is INT64_MIN + 1, symbol 1), which Dim(v) accepts.
Dim Known(int64_t v) {
  if (v < 0) OF_THROW(InvalidArgument) << "dimension size " << v << " is negative";
  return Dim(v);
}

[[noreturn]] void ThrowOverflow(Dim a, char op, Dim b) {
  OF_THROW(OutOfRange) << "dimension arithmetic overflows int64: " << a << " " << op << " " << b;
}
}  // namespace

Dim operator+(Dim a, Dim b) {
  int64_t r;
  if (a.is_known() && b.is_known()) {
    if (__builtin_add_overflow(a.value_, b.value_, &r)) ThrowOverflow(a, '+', b);
    return Known(r);
  }
  if (b == 0) return a;
  if (a == 0) return b;
  return Dim::Unknown();
}

Dim operator-(Dim a, Dim b) {
  if (a.is_known() && b.is_known()) return Known(a.value_ - b.value_);
  if (b == 0) return a;
  return Dim::Unknown();
}

Dim operator*(Dim a, Dim b) {
  int64_t r;
  if (a.is_known() && b.is_known()) {
    if (__builtin_mul_overflow(a.value_, b.value_, &r)) ThrowOverflow(a, '*', b);
    return Known(r);
  }
  if (a == 0 || b == 0) return Known(0);
  if (b == 1) return a;
  if (a == 1) return b;
  return Dim::Unknown();
}

Dim operator/(Dim a, Dim b) {
  OF_CHECK(!(b == 0)) << "division of dimension " << a << " by zero";
  if (a.is_known() && b.is_known()) return Known(a.value_ / b.value_);
  if (b == 1) return a;
  return Dim::Unknown();
}

Dim operator%(Dim a, Dim b) {
  OF_CHECK(!(b == 0)) << "dimension " << a << " modulo zero";
  if (a.is_known() && b.is_known()) return Known(a.value_ % b.value_);
  if (b == 1) return Known(0);
  return Dim::Unknown();
}

}  // namespace oneflow
