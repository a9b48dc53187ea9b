// Error type and check macros of the engine.
//
// Every failure inside core/ is reported by throwing oneflow::Error, which carries a StatusCode and a
// message written for the user ("conv2d: weight must be 4-D, got shape (3, 3)"). Nothing in core/
// aborts on input a user can give; the C boundary (capi/) turns every Error into an of_status_t.
//
// Usage:
//   OF_CHECK(ndim >= 0) << "ndim must not be negative, got " << ndim;
//   OF_CHECK_EQ(a.ndim(), b.ndim()) << "add: ranks differ";
//   OF_THROW(NotFound) << "no dtype with code " << code;
//   OF_THROW_FMT(InvalidArgument, "dims[{}] is {}, sizes must be >= 0", i, d);
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace oneflow {

// Canonical status codes. The values are part of the C ABI (OF_STATUS_*): append only.
enum class StatusCode : int32_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

std::string_view StatusCodeName(StatusCode code);

// Note [User strings in messages]: messages are UTF-8 and readable whatever the caller passed, so a
// string that comes from the user (a name, a path) is written with Quote: in single quotes, escaped
// (invalid UTF-8, control bytes and NUL as \xNN, a quote or backslash with a backslash) and cut to
// kQuoteLimit bytes ("...'(+N bytes)"). The C boundary passes every message through SanitizeMessage
// as well, which makes any remaining invalid UTF-8 or NUL an escape and caps the length.
struct Quoted {
  std::string_view text;
};
inline Quoted Quote(std::string_view text) { return Quoted{text}; }
inline constexpr size_t kQuoteLimit = 96;
std::string QuoteString(std::string_view text);  // what Quote formats as
// Valid UTF-8 without NUL, at most `limit` bytes (longer ones keep their head and say how long they were).
std::string SanitizeMessage(std::string_view message, size_t limit = 4096);

class Error : public std::exception {
 public:
  Error(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  StatusCode code_;
  std::string message_;
};

// Collects a message with operator<< (anything fmt can format), then is thrown by ErrorThrower.
class ErrorBuilder {
 public:
  explicit ErrorBuilder(StatusCode code, std::string prefix = {}) : code_(code), message_(std::move(prefix)) {}

  template <typename T>
  ErrorBuilder& operator<<(const T& value) & {
    fmt::format_to(std::back_inserter(message_), "{}", value);
    return *this;
  }
  template <typename T>
  ErrorBuilder&& operator<<(const T& value) && {
    return std::move(*this << value);
  }

  Error Build() && { return Error(code_, std::move(message_)); }

 private:
  StatusCode code_;
  std::string message_;
};

namespace detail {
// `thrower = builder << ...`: operator= binds looser than <<, so the whole message is built first.
struct ErrorThrower {
  [[noreturn]] void operator=(ErrorBuilder&& builder) const { throw std::move(builder).Build(); }
};

template <typename A, typename B>
std::string CheckOpMessage(const char* expr, const A& a, const B& b) {
  return fmt::format("check failed: {} ({} vs. {}): ", expr, a, b);
}
}  // namespace detail

}  // namespace oneflow

template <>
struct fmt::formatter<oneflow::Quoted> : fmt::formatter<std::string_view> {
  auto format(oneflow::Quoted q, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(oneflow::QuoteString(q.text), ctx);
  }
};

#define OF_THROW(code) \
  ::oneflow::detail::ErrorThrower() = ::oneflow::ErrorBuilder(::oneflow::StatusCode::k##code)

#define OF_THROW_FMT(code, ...) \
  throw ::oneflow::Error(::oneflow::StatusCode::k##code, ::fmt::format(__VA_ARGS__))

// A failed check is an InvalidArgument error: checks guard what callers pass in. Internal invariants
// use OF_CHECK_INTERNAL, whose failure is a bug in oneflow_c, not in the caller.
#define OF_CHECK(cond)                                                  \
  if (cond) {                                                           \
  } else /* NOLINT */                                                   \
    ::oneflow::detail::ErrorThrower() =                                 \
        ::oneflow::ErrorBuilder(::oneflow::StatusCode::kInvalidArgument)

#define OF_CHECK_INTERNAL(cond)                                                            \
  if (cond) {                                                                              \
  } else /* NOLINT */                                                                      \
    ::oneflow::detail::ErrorThrower() = ::oneflow::ErrorBuilder(                           \
        ::oneflow::StatusCode::kInternal, "internal error (please report): " #cond " failed: ")

#define OF_CHECK_OP_IMPL(a, b, op)                                                            \
  if (const auto of_check_ = std::make_pair((a), (b)); of_check_.first op of_check_.second) {  \
  } else /* NOLINT */                                                                         \
    ::oneflow::detail::ErrorThrower() = ::oneflow::ErrorBuilder(                              \
        ::oneflow::StatusCode::kInvalidArgument,                                              \
        ::oneflow::detail::CheckOpMessage(#a " " #op " " #b, of_check_.first, of_check_.second))

#define OF_CHECK_EQ(a, b) OF_CHECK_OP_IMPL(a, b, ==)
#define OF_CHECK_NE(a, b) OF_CHECK_OP_IMPL(a, b, !=)
#define OF_CHECK_LT(a, b) OF_CHECK_OP_IMPL(a, b, <)
#define OF_CHECK_LE(a, b) OF_CHECK_OP_IMPL(a, b, <=)
#define OF_CHECK_GT(a, b) OF_CHECK_OP_IMPL(a, b, >)
#define OF_CHECK_GE(a, b) OF_CHECK_OP_IMPL(a, b, >=)
