// 16-bit floating-point storage types: IEEE-754 binary16 (float16) and bfloat16.
// Arithmetic happens in float; these types only convert (round to nearest even) and store bits.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace oneflow {

struct float16 {
  uint16_t bits = 0;

  float16() = default;
  explicit float16(float f) : bits(FromFloat(f)) {}
  operator float() const { return ToFloat(bits); }  // NOLINT: widening is exact

  static uint16_t FromFloat(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or nan (keep nan quiet and non-zero)
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs < 0x38800000u) {                                                 // subnormal or zero
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);             // below half the min
      const uint32_t exp = abs >> 23;
      const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      const uint32_t shift = 126 - exp;  // 14..24 for this range
      uint32_t h = mant >> shift;
      const uint32_t rem = mant & ((1u << shift) - 1);
      const uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (h & 1u))) ++h;
      return static_cast<uint16_t>(sign | h);
    }
    uint32_t h = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }

  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
      bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
      bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
  }
};

struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  explicit bfloat16(float f) : bits(FromFloat(f)) {}
  operator float() const { return ToFloat(bits); }  // NOLINT: widening is exact

  static uint16_t FromFloat(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
  static float ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
};

// n float16 values to float and back (round to nearest even), bit for bit what float16's conversions
// give, but with the CPU's F16C instructions where it has them (8 at a time): the casts of float16
// autocast and of the half kernels (Note [Half precision in float32]) are made of these.
void Float16ToFloat(const float16* in, float* out, int64_t n);
void FloatToFloat16(const float* in, float16* out, int64_t n);

}  // namespace oneflow
