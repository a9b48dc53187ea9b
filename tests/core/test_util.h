// Helpers shared by the core unit tests.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include "core/common/error.h"

namespace oneflow::testing {

// Runs fn(), which must throw oneflow::Error with one of `codes` and a message containing every one
// of `substrings`. Returns the message (empty on failure) so a test can check more.
template <typename Fn, typename... Substrings>
std::string ExpectErrorAnyOf(Fn&& fn, std::initializer_list<StatusCode> codes, const Substrings&... substrings) {
  std::string expected;
  for (StatusCode c : codes) expected += (expected.empty() ? "" : " or ") + std::string(StatusCodeName(c));
  try {
    fn();
  } catch (const Error& e) {
    bool code_ok = false;
    for (StatusCode c : codes) code_ok = code_ok || e.code() == c;
    EXPECT_TRUE(code_ok) << "status " << StatusCodeName(e.code()) << ", expected " << expected
                         << "; message: " << e.message();
    for (std::string_view sub : std::initializer_list<std::string_view>{std::string_view(substrings)...}) {
      EXPECT_NE(e.message().find(sub), std::string::npos)
          << "message \"" << e.message() << "\" does not contain \"" << sub << "\"";
    }
    return e.message();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a std::exception that is not oneflow::Error: " << e.what();
    return {};
  } catch (...) {
    ADD_FAILURE() << "threw something that is not a std::exception";
    return {};
  }
  ADD_FAILURE() << "did not throw; expected " << expected;
  return {};
}

// The same with exactly one expected code.
template <typename Fn, typename... Substrings>
std::string ExpectError(Fn&& fn, StatusCode code, const Substrings&... substrings) {
  return ExpectErrorAnyOf(std::forward<Fn>(fn), {code}, substrings...);
}

// A device this build or machine cannot serve: Unavailable (or Unimplemented, for a backend that is
// built but not finished).
template <typename Fn, typename... Substrings>
std::string ExpectDeviceUnavailable(Fn&& fn, const Substrings&... substrings) {
  return ExpectErrorAnyOf(std::forward<Fn>(fn), {StatusCode::kUnavailable, StatusCode::kUnimplemented},
                          substrings...);
}

}  // namespace oneflow::testing

// Statement form, so that the failure points at the calling line.
#define OF_EXPECT_ERROR(stmt, code, ...)                                                       \
  do {                                                                                         \
    SCOPED_TRACE("OF_EXPECT_ERROR(" #stmt ")");                                                \
    ::oneflow::testing::ExpectError([&] { (void)(stmt); }, ::oneflow::StatusCode::k##code     \
                                    __VA_OPT__(, ) __VA_ARGS__);                               \
  } while (0)
