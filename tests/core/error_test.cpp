// Error and the check / throw macros.
#include "core/common/error.h"

#include <string>

#include <gtest/gtest.h>

#include "core/common/dim.h"
#include "tests/core/test_util.h"

namespace oneflow {
namespace {

using testing::ExpectError;

TEST(Error, Basics) {
  const Error e(StatusCode::kDataLoss, "lost it");
  EXPECT_EQ(e.code(), StatusCode::kDataLoss);
  EXPECT_EQ(e.message(), "lost it");
  EXPECT_STREQ(e.what(), "lost it");
  const std::exception& base = e;
  EXPECT_STREQ(base.what(), "lost it");
}

TEST(Error, CheckPassesSilently) {
  int n = 3;
  EXPECT_NO_THROW({ OF_CHECK(n == 3) << "never"; });
  EXPECT_NO_THROW({ OF_CHECK_EQ(n, 3) << "never"; });
  EXPECT_NO_THROW({ OF_CHECK_NE(n, 4); });
  EXPECT_NO_THROW({ OF_CHECK_LT(n, 4); });
  EXPECT_NO_THROW({ OF_CHECK_LE(n, 3); });
  EXPECT_NO_THROW({ OF_CHECK_GT(n, 2); });
  EXPECT_NO_THROW({ OF_CHECK_GE(n, 3); });
}

TEST(Error, CheckFailsWithInvalidArgumentAndStreamedMessage) {
  const int ndim = -2;
  const std::string msg = ExpectError([&] { OF_CHECK(ndim >= 0) << "ndim must not be negative, got " << ndim << '!'; },
                                      StatusCode::kInvalidArgument);
  EXPECT_EQ(msg, "ndim must not be negative, got -2!");
}

TEST(Error, CheckOpMessagesCarryBothValues) {
  const int a = 3, b = 7;
  std::string msg = ExpectError([&] { OF_CHECK_EQ(a, b) << "add: ranks differ"; }, StatusCode::kInvalidArgument,
                                "a == b", "3", "7", "add: ranks differ");
  EXPECT_EQ(msg, "check failed: a == b (3 vs. 7): add: ranks differ");
  msg = ExpectError([&] { OF_CHECK_NE(a, 3); }, StatusCode::kInvalidArgument, "a != 3", "(3 vs. 3)");
  msg = ExpectError([&] { OF_CHECK_LT(b, a); }, StatusCode::kInvalidArgument, "b < a", "(7 vs. 3)");
  msg = ExpectError([&] { OF_CHECK_LE(b, a); }, StatusCode::kInvalidArgument, "b <= a", "(7 vs. 3)");
  msg = ExpectError([&] { OF_CHECK_GT(a, b); }, StatusCode::kInvalidArgument, "a > b", "(3 vs. 7)");
  msg = ExpectError([&] { OF_CHECK_GE(a, b) << "x" << 1; }, StatusCode::kInvalidArgument, "a >= b", "(3 vs. 7)",
                    "x1");
  // Values of other formattable types, e.g. strings and Dims.
  const std::string s = "abc";
  ExpectError([&] { OF_CHECK_EQ(s, std::string("abd")); }, StatusCode::kInvalidArgument, "(abc vs. abd)");
  ExpectError([&] { OF_CHECK_EQ(Dim(4), Dim::Unknown()); }, StatusCode::kInvalidArgument, "(4 vs. ?)");
}

TEST(Error, CheckEvaluatesItsOperandsExactlyOnce) {
  int calls = 0;
  auto next = [&] { return ++calls; };
  OF_CHECK(next() == 1);
  EXPECT_EQ(calls, 1);
  OF_CHECK_EQ(next(), 2);
  EXPECT_EQ(calls, 2);
  ExpectError([&] { OF_CHECK_EQ(next(), 100) << "x"; }, StatusCode::kInvalidArgument, "(3 vs. 100)");
  EXPECT_EQ(calls, 3);
  ExpectError([&] { OF_CHECK(next() == 100) << "got " << calls; }, StatusCode::kInvalidArgument, "got 4");
  EXPECT_EQ(calls, 4);
  int lhs = 0, rhs = 0;
  ExpectError([&] { OF_CHECK_LT(++lhs + 10, ++rhs); }, StatusCode::kInvalidArgument, "(11 vs. 1)");
  EXPECT_EQ(lhs, 1);
  EXPECT_EQ(rhs, 1);
}

TEST(Error, MessageIsOnlyBuiltOnFailure) {
  int built = 0;
  auto expensive = [&] {
    ++built;
    return std::string("details");
  };
  OF_CHECK(true) << expensive();
  OF_CHECK_EQ(1, 1) << expensive();
  EXPECT_EQ(built, 0);
  ExpectError([&] { OF_CHECK(false) << expensive(); }, StatusCode::kInvalidArgument, "details");
  EXPECT_EQ(built, 1);
}

TEST(Error, CheckIsSafeInsideIfElse) {
  // The macro must not capture a following `else`.
  auto f = [](bool outer, bool cond) {
    int branch = 0;
    if (outer)
      OF_CHECK(cond) << "failed";
    else
      branch = 2;
    if (branch == 0) branch = 1;
    return branch;
  };
  EXPECT_EQ(f(true, true), 1);
  EXPECT_EQ(f(false, false), 2);  // the else belongs to `if (outer)`, so no check ran
  ExpectError([&] { f(true, false); }, StatusCode::kInvalidArgument, "failed");
}

TEST(Error, Throw) {
  const int code = 42;
  std::string msg = ExpectError([&] { OF_THROW(NotFound) << "no dtype with code " << code; }, StatusCode::kNotFound);
  EXPECT_EQ(msg, "no dtype with code 42");
  msg = ExpectError([] { OF_THROW(Unimplemented); }, StatusCode::kUnimplemented);
  EXPECT_EQ(msg, "");
  msg = ExpectError([] { OF_THROW_FMT(InvalidArgument, "dims[{}] is {}, sizes must be >= 0", 1, -3); },
                    StatusCode::kInvalidArgument);
  EXPECT_EQ(msg, "dims[1] is -3, sizes must be >= 0");
  ExpectError([] { OF_THROW_FMT(OutOfRange, "plain"); }, StatusCode::kOutOfRange, "plain");
}

TEST(Error, CheckInternal) {
  const std::string msg =
      ExpectError([] { OF_CHECK_INTERNAL(1 + 1 == 3) << "math"; }, StatusCode::kInternal, "1 + 1 == 3", "math");
  EXPECT_NE(msg.find("internal error"), std::string::npos);
  EXPECT_NO_THROW({ OF_CHECK_INTERNAL(true) << "never"; });
}

TEST(Error, StatusCodeNames) {
  const std::pair<StatusCode, const char*> expected[] = {
      {StatusCode::kOk, "OK"},
      {StatusCode::kCancelled, "CANCELLED"},
      {StatusCode::kUnknown, "UNKNOWN"},
      {StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
      {StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
      {StatusCode::kNotFound, "NOT_FOUND"},
      {StatusCode::kAlreadyExists, "ALREADY_EXISTS"},
      {StatusCode::kPermissionDenied, "PERMISSION_DENIED"},
      {StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
      {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
      {StatusCode::kAborted, "ABORTED"},
      {StatusCode::kOutOfRange, "OUT_OF_RANGE"},
      {StatusCode::kUnimplemented, "UNIMPLEMENTED"},
      {StatusCode::kInternal, "INTERNAL"},
      {StatusCode::kUnavailable, "UNAVAILABLE"},
      {StatusCode::kDataLoss, "DATA_LOSS"},
  };
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(static_cast<int>(expected[i].first), i);  // the numeric values are ABI
    EXPECT_EQ(StatusCodeName(expected[i].first), expected[i].second);
  }
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(16)), "UNRECOGNIZED");
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(-1)), "UNRECOGNIZED");
}

}  // namespace
}  // namespace oneflow

namespace oneflow {
namespace {

TEST(Error, QuoteEscapesAndCuts) {
  EXPECT_EQ(QuoteString("w"), "'w'");
  EXPECT_EQ(QuoteString("fl\xc3\xb6" "at"), "'fl\xc3\xb6" "at'");  // UTF-8 stays as it is
  EXPECT_EQ(QuoteString(std::string_view("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(QuoteString("\xff\x01"), "'\\xff\\x01'");
  EXPECT_EQ(QuoteString("it's"), "'it\\'s'");
  EXPECT_EQ(QuoteString("\xe2\x82"), "'\\xe2\\x82'");  // a cut sequence is two bad bytes
  const std::string long_name(1000, 'n');
  const std::string q = QuoteString(long_name);
  EXPECT_EQ(q, "'" + std::string(kQuoteLimit, 'n') + "'...(+" + std::to_string(1000 - kQuoteLimit) + " bytes)");
  EXPECT_EQ(fmt::format("{}", Quote("x")), "'x'");
}

TEST(Error, SanitizeMessageKeepsUtf8AndCapsTheLength) {
  EXPECT_EQ(SanitizeMessage("plain: ok"), "plain: ok");
  EXPECT_EQ(SanitizeMessage("\xc3\xb6 \xc3"), "\xc3\xb6 \\xc3");
  EXPECT_EQ(SanitizeMessage(std::string_view("cut\0here", 8)), "cut\\x00here");
  const std::string long_message(10000, 'm');
  const std::string s = SanitizeMessage(long_message, 100);
  EXPECT_LT(s.size(), 200u);
  EXPECT_EQ(s.substr(0, 100), std::string(100, 'm'));
  EXPECT_NE(s.find("100 of 10000 bytes"), std::string::npos);
  // A multi-byte character is never split by the cut.
  const std::string euros = std::string(99, 'e') + "\xe2\x82\xac";
  EXPECT_EQ(SanitizeMessage(euros, 100).substr(0, 99), std::string(99, 'e'));
  EXPECT_EQ(SanitizeMessage(euros, 100).find('\xe2'), std::string::npos);
}

}  // namespace
}  // namespace oneflow
