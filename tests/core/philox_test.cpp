// Philox4x32-10 against the known-answer vectors of Random123 (kat_vectors), and the uniform maps.
#include "core/common/philox.h"

#include <cmath>
#include <cstdint>
#include <set>

#include <gtest/gtest.h>

namespace oneflow {
namespace {

using Words = std::array<uint32_t, 4>;

// Random123 writes a counter as four words c0..c3 and a key as k0, k1; Philox4x32 takes them packed
// little-end first: key = k0 | k1 << 32, counter_lo = c0 | c1 << 32, counter_hi = c2 | c3 << 32.
Words Kat(Words c, std::array<uint32_t, 2> k) {
  const uint64_t key = uint64_t{k[0]} | uint64_t{k[1]} << 32;
  const uint64_t lo = uint64_t{c[0]} | uint64_t{c[1]} << 32;
  const uint64_t hi = uint64_t{c[2]} | uint64_t{c[3]} << 32;
  return Philox4x32(key, hi, lo);
}

TEST(Philox, Random123KnownAnswers) {
  EXPECT_EQ(Kat({0, 0, 0, 0}, {0, 0}), (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Kat({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Kat({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, DeterministicAndSensitiveToEveryInput) {
  const Words base = Philox4x32(42, 7, 9);
  EXPECT_EQ(Philox4x32(42, 7, 9), base);
  EXPECT_NE(Philox4x32(43, 7, 9), base);
  EXPECT_NE(Philox4x32(42 | uint64_t{1} << 40, 7, 9), base);  // high key word
  EXPECT_NE(Philox4x32(42, 8, 9), base);
  EXPECT_NE(Philox4x32(42, 7 | uint64_t{1} << 33, 9), base);  // c3
  EXPECT_NE(Philox4x32(42, 7, 10), base);
  EXPECT_NE(Philox4x32(42, 7, 9 | uint64_t{1} << 32), base);  // c1
  // Consecutive counters give distinct outputs (no collisions in a small run).
  std::set<uint32_t> firsts;
  for (uint64_t i = 0; i < 4096; ++i) firsts.insert(Philox4x32(1, 0, i)[0]);
  EXPECT_GT(firsts.size(), 4090u);
}

TEST(Philox, UniformFloatRange) {
  EXPECT_EQ(UniformFloat(0), 0.0f);
  EXPECT_EQ(UniformFloat(0xff), 0.0f);  // the low 8 bits are dropped
  EXPECT_EQ(UniformFloat(0x100), 0x1.0p-24f);
  EXPECT_EQ(UniformFloat(0x80000000u), 0.5f);
  EXPECT_EQ(UniformFloat(0xffffffffu), 1.0f - 0x1.0p-24f);
  EXPECT_LT(UniformFloat(0xffffffffu), 1.0f);
}

TEST(Philox, UniformDoubleRange) {
  EXPECT_EQ(UniformDouble(0, 0), 0.0);
  EXPECT_EQ(UniformDouble(0, 0x7ff), 0.0);  // the low 11 bits are dropped
  EXPECT_EQ(UniformDouble(0, 0x800), 0x1.0p-53);
  EXPECT_EQ(UniformDouble(0x80000000u, 0), 0.5);
  EXPECT_EQ(UniformDouble(1, 0), 0x1.0p-32);  // hi is the high word
  EXPECT_EQ(UniformDouble(0xffffffffu, 0xffffffffu), 1.0 - 0x1.0p-53);
  EXPECT_LT(UniformDouble(0xffffffffu, 0xffffffffu), 1.0);
}

TEST(Philox, UniformOutputsCoverTheUnitInterval) {
  // 40000 draws into 10 bins: each bin expects 4000 with a standard deviation of 60, allow 5 sigma.
  int bins[10] = {};
  double sum = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    for (uint32_t w : Philox4x32(0x5eed, 0, i)) {
      const float u = UniformFloat(w);
      ASSERT_GE(u, 0.0f);
      ASSERT_LT(u, 1.0f);
      ++bins[static_cast<int>(u * 10)];
      sum += u;
    }
  }
  for (int b = 0; b < 10; ++b) EXPECT_NEAR(bins[b], 4000, 300) << "bin " << b;
  EXPECT_NEAR(sum / 40000, 0.5, 0.01);  // sd of the mean is 0.0014
}

}  // namespace
}  // namespace oneflow
