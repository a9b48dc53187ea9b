// float16 / bfloat16: exact values, round-to-nearest-even, overflow, exhaustive round trips; the bulk
// float16 conversions (F16C where the CPU has it) against the scalar ones.
#include "core/common/half.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace oneflow {
namespace {

uint16_t H(float f) { return float16::FromFloat(f); }
uint16_t B(float f) { return bfloat16::FromFloat(f); }
float FloatBits(uint32_t bits) { return std::bit_cast<float>(bits); }

bool IsF16Nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool IsBF16Nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// Independent decoders, written from the IEEE-754 definitions with ldexp (exact in double).
double RefF16(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f) {
    v = mant == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else {
    v = std::ldexp(static_cast<double>(1024 + mant), exp - 25);
  }
  return sign ? -v : v;
}
double RefBF16(uint16_t b) {
  const int sign = b >> 15, exp = (b >> 7) & 0xff, mant = b & 0x7f;
  double v;
  if (exp == 0xff) {
    v = mant == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -133);
  } else {
    v = std::ldexp(static_cast<double>(128 + mant), exp - 134);
  }
  return sign ? -v : v;
}

TEST(Float16, ExactValues) {
  EXPECT_EQ(H(0.0f), 0x0000);
  EXPECT_EQ(H(-0.0f), 0x8000);
  EXPECT_EQ(H(1.0f), 0x3c00);
  EXPECT_EQ(H(-1.0f), 0xbc00);
  EXPECT_EQ(H(2.5f), 0x4100);
  EXPECT_EQ(H(-2.0f), 0xc000);
  EXPECT_EQ(H(0.5f), 0x3800);
  EXPECT_EQ(H(65504.0f), 0x7bff);              // the largest finite value
  EXPECT_EQ(H(-65504.0f), 0xfbff);
  EXPECT_EQ(H(std::ldexp(1.0f, -14)), 0x0400);  // the smallest normal
  EXPECT_EQ(H(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(H(std::ldexp(1023.0f, -24)), 0x03ff);  // the largest subnormal
  EXPECT_EQ(H(6.1e-5f), 0x03ff);  // 6.1e-5 / 2^-24 = 1023.4, so the largest subnormal
  EXPECT_EQ(H(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(H(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(IsF16Nan(H(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsF16Nan(H(-std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsF16Nan(H(FloatBits(0x7f800001u))));  // signalling nan with a low payload stays a nan
  EXPECT_TRUE(IsF16Nan(H(FloatBits(0xff800001u))));

  EXPECT_EQ(float16::ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(float16::ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(float16::ToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(float16::ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(std::bit_cast<uint32_t>(float16::ToFloat(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isinf(float16::ToFloat(0x7c00)) && float16::ToFloat(0x7c00) > 0);
  EXPECT_TRUE(std::isinf(float16::ToFloat(0xfc00)) && float16::ToFloat(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(float16::ToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(float16::ToFloat(0x7c01)));

  // The struct converts the same way.
  const float16 h(3.0f);
  EXPECT_EQ(h.bits, 0x4200);
  EXPECT_EQ(static_cast<float>(h), 3.0f);
  EXPECT_EQ(float16().bits, 0);
}

TEST(Float16, RoundToNearestEven) {
  const float ulp1 = std::ldexp(1.0f, -10);  // spacing of float16 in [1, 2)
  EXPECT_EQ(H(1.0f + ulp1), 0x3c01);                      // exact
  EXPECT_EQ(H(1.0f + std::ldexp(1.0f, -11)), 0x3c00);     // tie -> even (down)
  EXPECT_EQ(H(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02); // tie -> even (up)
  EXPECT_EQ(H(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);  // just above a tie
  EXPECT_EQ(H(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)), 0x3c01);  // just below a tie
  EXPECT_EQ(H(-(1.0f + 3 * std::ldexp(1.0f, -11))), 0xbc02);
  // Rounding up carries into the exponent: 2 - 2^-12 is above the midpoint of 0x3bff and 2.
  EXPECT_EQ(H(2.0f - std::ldexp(1.0f, -12)), 0x4000);
  // Subnormal ties: 2^-25 (half the smallest subnormal) goes to 0, 3*2^-25 goes to 2*2^-24.
  EXPECT_EQ(H(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(H(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(H(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(H(std::ldexp(5.0f, -25)), 0x0002);
  EXPECT_EQ(H(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(H(-std::ldexp(1.0f, -26)), 0x8000);  // underflow keeps the sign
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(H(std::ldexp(2047.0f, -25)), 0x0400);
}

TEST(Float16, Overflow) {
  EXPECT_EQ(H(65519.0f), 0x7bff);  // below the midpoint of 65504 and 65536
  EXPECT_EQ(H(65520.0f), 0x7c00);  // the midpoint rounds to even, which is infinity
  EXPECT_EQ(H(-65520.0f), 0xfc00);
  EXPECT_EQ(H(1e6f), 0x7c00);
  EXPECT_EQ(H(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(H(-std::numeric_limits<float>::max()), 0xfc00);
}

TEST(Float16, EveryBitPatternDecodesAndRoundTrips) {
  int nans = 0;
  for (uint32_t i = 0; i <= 0xffff; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = float16::ToFloat(h);
    if (IsF16Nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_TRUE(IsF16Nan(H(f))) << std::hex << i;
      ++nans;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), RefF16(h)) << std::hex << i;
    ASSERT_EQ(H(f), h) << std::hex << i;
  }
  EXPECT_EQ(nans, 2 * 1023);
}

// Every midpoint between two adjacent finite float16 values is a float; it must round to the
// neighbour with an even significand, and the floats just beside it to the nearer neighbour.
TEST(Float16, EveryMidpointRoundsToEven) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t lo = 0; lo < 0x7bff; ++lo) {
      const auto a = static_cast<uint16_t>(sign | lo), b = static_cast<uint16_t>(sign | (lo + 1));
      const double mid = (RefF16(a) + RefF16(b)) / 2;
      const auto mf = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(mf), mid);
      const uint16_t even = (lo & 1) ? b : a;
      ASSERT_EQ(H(mf), even) << std::hex << lo;
      const float toward_a = std::nextafter(mf, static_cast<float>(RefF16(a)));
      const float toward_b = std::nextafter(mf, static_cast<float>(RefF16(b)));
      ASSERT_EQ(H(toward_a), a) << std::hex << lo;
      ASSERT_EQ(H(toward_b), b) << std::hex << lo;
    }
  }
}

// Float16ToFloat / FloatToFloat16 give what float16's own conversions give: every float16 bit pattern
// widened, and floats across the whole range (every 4099th bit pattern, plus each float16 midpoint and
// its neighbours) rounded; the lengths leave tails that are not a multiple of the vector width.
TEST(Float16, BulkConversionsEqualTheScalarOnes) {
  std::vector<float16> halves(0x10000);
  for (uint32_t i = 0; i <= 0xffff; ++i) halves[i].bits = static_cast<uint16_t>(i);
  std::vector<float> wide(halves.size() - 3);
  Float16ToFloat(halves.data(), wide.data(), static_cast<int64_t>(wide.size()));
  for (size_t i = 0; i < wide.size(); ++i) {
    const float want = float16::ToFloat(halves[i].bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(wide[i])) << std::hex << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(want)) << std::hex << i;
    }
  }
  std::vector<float> floats;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 4099) floats.push_back(FloatBits(static_cast<uint32_t>(b)));
  for (uint32_t lo = 0; lo < 0x7bff; ++lo) {
    const auto mid =
        static_cast<float>((RefF16(static_cast<uint16_t>(lo)) + RefF16(static_cast<uint16_t>(lo + 1))) / 2);
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      floats.push_back(f);
      floats.push_back(-f);
    }
  }
  floats.push_back(std::numeric_limits<float>::infinity());
  floats.push_back(std::numeric_limits<float>::quiet_NaN());
  floats.push_back(65520.0f);  // rounds to inf
  std::vector<float16> narrow(floats.size());
  FloatToFloat16(floats.data(), narrow.data(), static_cast<int64_t>(floats.size()));
  for (size_t i = 0; i < floats.size(); ++i) {
    const uint16_t want = H(floats[i]);
    if (IsF16Nan(want)) {
      ASSERT_TRUE(IsF16Nan(narrow[i].bits)) << floats[i];
    } else {
      ASSERT_EQ(narrow[i].bits, want) << floats[i];
    }
  }
}

TEST(BFloat16, ExactValuesAndRounding) {
  EXPECT_EQ(B(0.0f), 0x0000);
  EXPECT_EQ(B(-0.0f), 0x8000);
  EXPECT_EQ(B(1.0f), 0x3f80);
  EXPECT_EQ(B(-1.0f), 0xbf80);
  EXPECT_EQ(B(2.5f), 0x4020);
  EXPECT_EQ(B(3.3895313892515355e38f), 0x7f7f);  // the largest finite value
  EXPECT_EQ(B(std::ldexp(1.0f, -126)), 0x0080);  // the smallest normal
  EXPECT_EQ(B(std::ldexp(1.0f, -133)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(B(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(B(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(IsBF16Nan(B(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsBF16Nan(B(FloatBits(0x7f800001u))));  // payload only in the dropped bits
  EXPECT_TRUE(IsBF16Nan(B(FloatBits(0xffffffffu))));  // must not carry into the sign
  // Ties to even.
  EXPECT_EQ(B(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(B(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(B(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  // Overflow: FLT_MAX is above the midpoint of 0x7f7f and 2^128.
  EXPECT_EQ(B(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(B(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(bfloat16::ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16::ToFloat(0x4020), 2.5f);
  const bfloat16 b(3.0f);
  EXPECT_EQ(b.bits, 0x4040);
  EXPECT_EQ(static_cast<float>(b), 3.0f);
}

TEST(BFloat16, EveryBitPatternDecodesAndRoundTrips) {
  int nans = 0;
  for (uint32_t i = 0; i <= 0xffff; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = bfloat16::ToFloat(h);
    if (IsBF16Nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_TRUE(IsBF16Nan(B(f))) << std::hex << i;
      ++nans;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), RefBF16(h)) << std::hex << i;
    ASSERT_EQ(B(f), h) << std::hex << i;
  }
  EXPECT_EQ(nans, 2 * 127);
}

TEST(BFloat16, EveryMidpointRoundsToEven) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t lo = 0; lo < 0x7f7f; ++lo) {
      const auto a = static_cast<uint16_t>(sign | lo), b = static_cast<uint16_t>(sign | (lo + 1));
      const double mid = (RefBF16(a) + RefBF16(b)) / 2;
      const auto mf = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(mf), mid);
      ASSERT_EQ(B(mf), (lo & 1) ? b : a) << std::hex << lo;
      ASSERT_EQ(B(std::nextafter(mf, static_cast<float>(RefBF16(a)))), a) << std::hex << lo;
      ASSERT_EQ(B(std::nextafter(mf, static_cast<float>(RefBF16(b)))), b) << std::hex << lo;
    }
  }
}

}  // namespace
}  // namespace oneflow
