#include "core/common/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace oneflow {
namespace {

#if defined(__x86_64__)
// Every CPU with AVX2 has F16C (and clang's __builtin_cpu_supports does not know "f16c"); the builtin
// also checks that the OS saves the ymm registers.
bool HasF16c() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

__attribute__((target("avx,f16c"))) int64_t ToFloatF16c(const float16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
  return i;
}

__attribute__((target("avx,f16c"))) int64_t FromFloatF16c(const float* in, float16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  return i;
}
#endif

}  // namespace

void Float16ToFloat(const float16* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (HasF16c()) i = ToFloatF16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = float16::ToFloat(in[i].bits);
}

void FloatToFloat16(const float* in, float16* out, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (HasF16c()) i = FromFloatF16c(in, out, n);
#endif
  for (; i < n; ++i) out[i].bits = float16::FromFloat(in[i]);
}

}  // namespace oneflow
