#include "core/common/error.h"

#include <algorithm>

#include "core/common/utf8.h"

namespace oneflow {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNRECOGNIZED";
}

}  // namespace oneflow

namespace oneflow {
namespace {

// Appends `text` with invalid UTF-8 and the bytes `escape_ascii` selects written as \xNN, stopping
// before `limit` bytes of output (at a character boundary); returns how many input bytes it consumed.
template <typename EscapeAscii>
size_t AppendEscaped(std::string& out, std::string_view text, size_t limit, EscapeAscii escape_ascii) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t n = Utf8SequenceLength(text.substr(i));
    std::string piece;
    if (n == 1 && escape_ascii(c)) {
      piece = c == '\'' || c == '\\' ? std::string{'\\', static_cast<char>(c)} : fmt::format("\\x{:02x}", c);
    } else if (n == 0) {
      piece = fmt::format("\\x{:02x}", c);
      n = 1;
    } else {
      piece = std::string(text.substr(i, n));
    }
    if (out.size() + piece.size() > limit) break;
    out += piece;
    i += n;
  }
  return i;
}

}  // namespace

std::string QuoteString(std::string_view text) {
  std::string out = "'";
  const size_t used = AppendEscaped(out, text, kQuoteLimit + 1, [](unsigned char c) {
    return c < 0x20 || c == 0x7f || c == '\'' || c == '\\';
  });
  out += '\'';
  if (used < text.size()) out += fmt::format("...(+{} bytes)", text.size() - used);
  return out;
}

std::string SanitizeMessage(std::string_view message, size_t limit) {
  std::string out;
  out.reserve(std::min(message.size(), limit));
  const size_t used = AppendEscaped(out, message, limit, [](unsigned char c) { return c == 0; });
  if (used < message.size()) {
    out += fmt::format(" ... (message cut: {} of {} bytes shown)", used, message.size());
  }
  return out;
}

}  // namespace oneflow
