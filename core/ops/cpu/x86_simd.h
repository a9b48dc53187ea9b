// What the engine's own x86 vector kernels (winograd.cpp, batch_norm_nhwc.cpp, pooling.cpp) share: the
// target attributes their vector functions are compiled with, and the run-time checks that the CPU has
// those instructions. Functions marked OF_AVX2 may be called only where HasAvx2Fma(), those marked
// OF_AVX512 only where HasAvx512() (x86-64 only).
#pragma once

#if defined(__x86_64__)

// Per function, not `#pragma GCC target`: clang (the sanitizer builds) ignores that pragma. Lambdas do not
// inherit the attribute, so vector code belongs in marked functions.
#define OF_AVX2 __attribute__((target("avx2,fma")))
#define OF_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace oneflow::cpu {

// Whether the CPU (and the OS, which must save the ymm registers) runs AVX2 and FMA; computed once.
inline bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// Whether it runs AVX-512F too (and the OS saves the zmm registers); computed once.
inline bool HasAvx512() {
  static const bool has = HasAvx2Fma() && __builtin_cpu_supports("avx512f");
  return has;
}

}  // namespace oneflow::cpu

#endif
