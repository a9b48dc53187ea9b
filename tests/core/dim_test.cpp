// Dim: known / unknown / named-symbol dimensions, arithmetic, comparisons, conversions.
#include "core/common/dim.h"

#include <limits>
#include <set>
#include <thread>
#include <vector>
#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

#include "tests/core/test_util.h"

namespace oneflow {
namespace {

using testing::ExpectError;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

const Dim kU = Dim::Unknown();

TEST(Dim, Encoding) {
  EXPECT_EQ(sizeof(Dim), sizeof(int64_t));
  EXPECT_EQ(Dim::kUnknownValue, kMin);
  EXPECT_EQ(Dim().raw(), kMin);
  EXPECT_EQ(kU.raw(), kMin);
  EXPECT_EQ(Dim(7).raw(), 7);
  EXPECT_EQ(Dim(0).raw(), 0);
  EXPECT_TRUE(Dim(0).is_known());
  EXPECT_FALSE(Dim(0).is_unknown());
  EXPECT_FALSE(Dim(0).is_symbol());
  EXPECT_TRUE(kU.is_unknown());
  EXPECT_FALSE(kU.is_known());
  EXPECT_FALSE(kU.is_symbol());
  const Dim n = Dim::NewSymbol("enc");
  EXPECT_TRUE(n.is_symbol());
  EXPECT_FALSE(n.is_known());
  EXPECT_FALSE(n.is_unknown());
  EXPECT_GT(n.raw(), kMin);
  EXPECT_LT(n.raw(), kMin + Dim::kMaxSymbols);
  // Integral types of every width construct a Dim.
  EXPECT_EQ(Dim(int8_t{3}).raw(), 3);
  EXPECT_EQ(Dim(uint16_t{300}).raw(), 300);
  EXPECT_EQ(Dim(size_t{1} << 40).raw(), int64_t{1} << 40);
}

TEST(Dim, NegativeConstructionIsAnError) {
  for (int64_t v : {int64_t{-1}, int64_t{-5}, int64_t{-1000000}, kMin + Dim::kMaxSymbols}) {
    SCOPED_TRACE(v);
    ExpectError([&] { Dim d(v); (void)d; }, StatusCode::kInvalidArgument, std::to_string(v), "negative");
  }
  ExpectError([] { Dim d(-3); (void)d; }, StatusCode::kInvalidArgument, "-3");
}

TEST(Dim, KnownArithmetic) {
  EXPECT_EQ((Dim(6) + Dim(7)).raw(), 13);
  EXPECT_EQ((Dim(6) - Dim(4)).raw(), 2);
  EXPECT_EQ((Dim(6) - Dim(6)).raw(), 0);
  EXPECT_EQ((Dim(6) * Dim(7)).raw(), 42);
  EXPECT_EQ((Dim(7) / Dim(2)).raw(), 3);  // floor division
  EXPECT_EQ((Dim(7) % Dim(3)).raw(), 1);
  EXPECT_EQ((Dim(0) / Dim(5)).raw(), 0);
  // Mixed with plain integers, on either side.
  EXPECT_EQ((Dim(6) + 1).raw(), 7);
  EXPECT_EQ((1 + Dim(6)).raw(), 7);
  EXPECT_EQ((10 - Dim(4)).raw(), 6);
  EXPECT_EQ((Dim(4) * int64_t{3}).raw(), 12);
  EXPECT_EQ((Dim(9) / 3u).raw(), 3);
  EXPECT_EQ((20 % Dim(6)).raw(), 2);
  Dim d = 5;
  d += 2;
  EXPECT_EQ(d.raw(), 7);
  d *= 3;
  EXPECT_EQ(d.raw(), 21);
  d -= 1;
  EXPECT_EQ(d.raw(), 20);
  d /= 6;
  EXPECT_EQ(d.raw(), 3);
  d %= 2;
  EXPECT_EQ(d.raw(), 1);
}

TEST(Dim, UnknownAndSymbolPropagate) {
  const Dim n = Dim::NewSymbol("N");
  for (Dim x : {kU, n}) {
    SCOPED_TRACE(x.ToString());
    EXPECT_TRUE((x + 3).is_unknown());
    EXPECT_TRUE((3 + x).is_unknown());
    EXPECT_TRUE((x - 2).is_unknown());
    EXPECT_TRUE((10 - x).is_unknown());
    EXPECT_TRUE((x * 4).is_unknown());
    EXPECT_TRUE((4 * x).is_unknown());
    EXPECT_TRUE((x / 2).is_unknown());
    EXPECT_TRUE((12 / x).is_unknown());
    EXPECT_TRUE((x % 5).is_unknown());
    EXPECT_TRUE((x + x).is_unknown());
    EXPECT_TRUE((x * x).is_unknown());
    EXPECT_TRUE((x + kU).is_unknown());
    // The identities keep x exactly (a symbol stays that symbol).
    EXPECT_EQ((x * 1).raw(), x.raw());
    EXPECT_EQ((1 * x).raw(), x.raw());
    EXPECT_EQ((x + 0).raw(), x.raw());
    EXPECT_EQ((0 + x).raw(), x.raw());
    EXPECT_EQ((x - 0).raw(), x.raw());
    EXPECT_EQ((x / 1).raw(), x.raw());
    EXPECT_EQ((x * 0).raw(), 0);
    EXPECT_EQ((0 * x).raw(), 0);
    EXPECT_EQ((x * Dim(0)).raw(), 0);
    EXPECT_EQ((x % 1).raw(), 0);
  }
  const Dim m = Dim::NewSymbol("M");
  EXPECT_TRUE((n + m).is_unknown());
  EXPECT_TRUE((n * m).is_unknown());
  EXPECT_TRUE((n * kU).is_unknown());
}

TEST(Dim, DivisionByZeroIsAnError) {
  const Dim n = Dim::NewSymbol("N");
  for (Dim x : {Dim(6), Dim(0), kU, n}) {
    SCOPED_TRACE(x.ToString());
    ExpectError([&] { (void)(x / 0); }, StatusCode::kInvalidArgument, "zero", x.ToString());
    ExpectError([&] { (void)(x / Dim(0)); }, StatusCode::kInvalidArgument, "zero");
    ExpectError([&] { (void)(x % 0); }, StatusCode::kInvalidArgument, "zero");
  }
}

TEST(Dim, OverflowIsOutOfRange) {
  ExpectError([] { (void)(Dim(kMax) + 1); }, StatusCode::kOutOfRange, "overflow");
  ExpectError([] { (void)(Dim(kMax) + Dim(kMax)); }, StatusCode::kOutOfRange, "overflow");
  ExpectError([] { (void)(Dim(int64_t{1} << 32) * Dim(int64_t{1} << 31)); }, StatusCode::kOutOfRange,
              "overflow", "4294967296", "2147483648");
  ExpectError([] { (void)(Dim(3037000500) * Dim(3037000500)); }, StatusCode::kOutOfRange, "overflow");
  // Just inside the range is fine.
  EXPECT_EQ((Dim(kMax - 1) + 1).raw(), kMax);
  EXPECT_EQ((Dim(int64_t{1} << 31) * Dim(int64_t{1} << 31)).raw(), int64_t{1} << 62);
}

TEST(Dim, NegativeResultIsAnError) {
  ExpectError([] { (void)(Dim(3) - Dim(5)); }, StatusCode::kInvalidArgument, "-2");
  ExpectError([] { (void)(Dim(0) - 1); }, StatusCode::kInvalidArgument, "-1");
  // Differences so negative that they land in the encoding range of symbols or unknown must not
  // silently turn into a symbol or unknown.
  ExpectError([] { (void)(Dim(0) - Dim(kMax)); }, StatusCode::kInvalidArgument, "negative");
  ExpectError([] { (void)(Dim(1) - Dim(kMax)); }, StatusCode::kInvalidArgument, "negative");
  ExpectError([] { (void)(Dim(0) - Dim(kMax - 5)); }, StatusCode::kInvalidArgument, "negative");
}

TEST(Dim, Equality) {
  const Dim n = Dim::NewSymbol("N");
  const Dim n2 = Dim::NewSymbol("N");  // same name, a different symbol
  EXPECT_TRUE(Dim(4) == Dim(4));
  EXPECT_FALSE(Dim(4) == Dim(5));
  EXPECT_TRUE(kU == Dim::Unknown());  // raw equality
  EXPECT_TRUE(n == n);
  EXPECT_FALSE(n == n2);
  EXPECT_TRUE(n != n2);
  EXPECT_FALSE(n == kU);
  EXPECT_FALSE(kU == n);
  EXPECT_FALSE(n == Dim(4));
  EXPECT_TRUE(kU != Dim(0));
  // With plain integers: only a known dim equals a number.
  EXPECT_TRUE(Dim(4) == 4);
  EXPECT_TRUE(4 == Dim(4));
  EXPECT_TRUE(Dim(4) != 5);
  EXPECT_FALSE(kU == 0);
  EXPECT_FALSE(kU == kMin);  // even the number that is unknown's encoding
  EXPECT_FALSE(n == n.raw());
  EXPECT_TRUE(kU != 1);
  EXPECT_FALSE(Dim(4) == uint8_t{5});
  EXPECT_TRUE(Dim(200) == uint8_t{200});
}

TEST(Dim, OrderingOnlyBetweenKnownDims) {
  const Dim n = Dim::NewSymbol("N");
  EXPECT_TRUE(Dim(2) < Dim(3));
  EXPECT_TRUE(Dim(3) <= Dim(3));
  EXPECT_TRUE(Dim(4) > Dim(3));
  EXPECT_TRUE(Dim(3) >= Dim(3));
  EXPECT_FALSE(Dim(3) < Dim(3));
  EXPECT_FALSE(Dim(4) <= Dim(3));
  for (Dim x : {kU, n}) {
    SCOPED_TRACE(x.ToString());
    for (Dim y : {Dim(0), Dim(5), kU, n}) {
      EXPECT_FALSE(x < y);
      EXPECT_FALSE(x <= y);
      EXPECT_FALSE(x > y);
      EXPECT_FALSE(x >= y);
      EXPECT_FALSE(y < x);
      EXPECT_FALSE(y <= x);
      EXPECT_FALSE(y > x);
      EXPECT_FALSE(y >= x);
    }
    EXPECT_FALSE(x < 5);
    EXPECT_FALSE(x >= 0);
    EXPECT_FALSE(5 > x);
    EXPECT_FALSE(0 <= x);
    EXPECT_FALSE(x > kMin);  // unknown's encoding is INT64_MIN, but it is not "a number below"
  }
  EXPECT_TRUE(Dim(3) < 5);
  EXPECT_TRUE(Dim(5) <= 5);
  EXPECT_TRUE(Dim(6) > 5);
  EXPECT_TRUE(Dim(5) >= 5);
  EXPECT_TRUE(2 < Dim(3));
  EXPECT_TRUE(3 <= Dim(3));
  EXPECT_TRUE(4 > Dim(3));
  EXPECT_TRUE(3 >= Dim(3));
  EXPECT_FALSE(Dim(0) < -1);  // compares values, not unsigned
  EXPECT_TRUE(Dim(0) > -1);
}

TEST(Dim, ConversionToIntegerThrowsUnlessKnown) {
  const Dim five = 5;
  const int64_t v = five;
  EXPECT_EQ(v, 5);
  EXPECT_EQ(five.value(), 5);
  ExpectError([] { int64_t x = Dim::Unknown(); (void)x; }, StatusCode::kInvalidArgument, "?");
  ExpectError([] { (void)Dim::Unknown().value(); }, StatusCode::kInvalidArgument, "?", "not known");
  const Dim batch = Dim::NewSymbol("batch");
  ExpectError([&] { int64_t x = batch; (void)x; }, StatusCode::kInvalidArgument, "batch");
  ExpectError([&] { (void)batch.value(); }, StatusCode::kInvalidArgument, "batch");
  // Explicit conversions and uses as an integer go through the same check.
  ExpectError([] { (void)static_cast<int64_t>(Dim::Unknown()); }, StatusCode::kInvalidArgument, "?");
  ExpectError([&] { std::vector<int> buffer(static_cast<size_t>(static_cast<int64_t>(batch))); },
              StatusCode::kInvalidArgument, "batch");
}

TEST(Dim, ValueOr) {
  const Dim n = Dim::NewSymbol("N");
  EXPECT_EQ(Dim(5).value_or(-1), 5);
  EXPECT_EQ(Dim(0).value_or(-1), 0);
  EXPECT_EQ(kU.value_or(-1), -1);
  EXPECT_EQ(n.value_or(42), 42);
}

TEST(Dim, ToStringAndFormat) {
  EXPECT_EQ(Dim(5).ToString(), "5");
  EXPECT_EQ(Dim(0).ToString(), "0");
  EXPECT_EQ(Dim(kMax).ToString(), "9223372036854775807");
  EXPECT_EQ(kU.ToString(), "?");
  const Dim seq = Dim::NewSymbol("seq");
  EXPECT_EQ(seq.ToString(), "seq");
  EXPECT_EQ(seq.symbol_name(), "seq");
  EXPECT_EQ(Dim(3).symbol_name(), "");
  EXPECT_EQ(kU.symbol_name(), "");
  EXPECT_EQ(fmt::format("[{}|{}|{}]", Dim(3), kU, seq), "[3|?|seq]");
}

TEST(Dim, NewSymbolDistinctness) {
  const Dim a = Dim::NewSymbol("N"), b = Dim::NewSymbol("N"), c = Dim::NewSymbol("M");
  EXPECT_NE(a.raw(), b.raw());
  EXPECT_NE(a.raw(), c.raw());
  EXPECT_NE(b.raw(), c.raw());
  EXPECT_EQ(a.symbol_name(), "N");
  EXPECT_EQ(b.symbol_name(), "N");
  EXPECT_EQ(c.symbol_name(), "M");
  const Dim unicode = Dim::NewSymbol("seq_len2");
  EXPECT_EQ(unicode.ToString(), "seq_len2");
  std::unordered_set<Dim> set{a, b, c, a, Dim(1), kU, kU};
  EXPECT_EQ(set.size(), 5u);
}

TEST(Dim, NewSymbolFromManyThreadsIsDistinct) {
  constexpr int kThreads = 8, kEach = 200;
  std::vector<std::vector<Dim>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) made[static_cast<size_t>(t)].push_back(Dim::NewSymbol("T" + std::to_string(t)));
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> raws;
  for (int t = 0; t < kThreads; ++t) {
    for (Dim d : made[static_cast<size_t>(t)]) {
      raws.insert(d.raw());
      EXPECT_EQ(d.symbol_name(), "T" + std::to_string(t));
    }
  }
  EXPECT_EQ(raws.size(), static_cast<size_t>(kThreads * kEach));
}

TEST(Dim, NewSymbolRejectsBadNames) {
  ExpectError([] { Dim::NewSymbol(""); }, StatusCode::kInvalidArgument, "non-empty");
  ExpectError([] { Dim::NewSymbol("?"); }, StatusCode::kInvalidArgument, "'?'");
  ExpectError([] { Dim::NewSymbol("1abc"); }, StatusCode::kInvalidArgument, "1abc", "digit");
  ExpectError([] { Dim::NewSymbol("0"); }, StatusCode::kInvalidArgument, "digit");
}

TEST(Dim, FromRaw) {
  EXPECT_EQ(Dim::FromRaw(0, "x").raw(), 0);
  EXPECT_EQ(Dim::FromRaw(123, "x").raw(), 123);
  EXPECT_EQ(Dim::FromRaw(kMax, "x").raw(), kMax);
  EXPECT_TRUE(Dim::FromRaw(kMin, "x").is_unknown());
  const Dim n = Dim::NewSymbol("fromraw");
  const Dim back = Dim::FromRaw(n.raw(), "x");
  EXPECT_TRUE(back == n);
  EXPECT_EQ(back.symbol_name(), "fromraw");

  ExpectError([] { Dim::FromRaw(-1, "dims[2]"); }, StatusCode::kInvalidArgument, "dims[2]", "-1");
  ExpectError([] { Dim::FromRaw(-5, "the size"); }, StatusCode::kInvalidArgument, "the size", "-5");
  ExpectError([] { Dim::FromRaw(kMin + Dim::kMaxSymbols, "w"); }, StatusCode::kInvalidArgument, "w is");
  // In the symbol range, but no symbol with that number was ever created.
  const int64_t never = kMin + Dim::kMaxSymbols - 1;
  ExpectError([&] { Dim::FromRaw(never, "shape[0]"); }, StatusCode::kInvalidArgument, "shape[0]",
              std::to_string(never), "symbol");
}

TEST(Dim, ProvablyEqual) {
  const Dim n = Dim::NewSymbol("N"), m = Dim::NewSymbol("M");
  EXPECT_TRUE(Dim::ProvablyEqual(Dim(3), Dim(3)));
  EXPECT_FALSE(Dim::ProvablyEqual(Dim(3), Dim(4)));
  EXPECT_TRUE(Dim::ProvablyEqual(n, n));
  EXPECT_FALSE(Dim::ProvablyEqual(n, m));
  EXPECT_FALSE(Dim::ProvablyEqual(kU, kU));  // two unknowns may differ at run time
  EXPECT_FALSE(Dim::ProvablyEqual(kU, Dim(3)));
  EXPECT_FALSE(Dim::ProvablyEqual(Dim(3), kU));
  EXPECT_FALSE(Dim::ProvablyEqual(n, kU));
  EXPECT_FALSE(Dim::ProvablyEqual(kU, n));
  EXPECT_FALSE(Dim::ProvablyEqual(n, Dim(3)));
}

}  // namespace
}  // namespace oneflow
