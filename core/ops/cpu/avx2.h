// What the engine's own AVX2 kernels (winograd.cpp, batch_norm_nhwc.cpp) share: the target attribute their
// vector functions are compiled with, and the run-time check that the CPU has those instructions.
// Functions marked OF_AVX2 may be called only where HasAvx2Fma() (x86-64 only).
#pragma once

#if defined(__x86_64__)

// Per function, not `#pragma GCC target`: clang (the sanitizer builds) ignores that pragma. Lambdas do not
// inherit the attribute, so vector code belongs in marked functions.
#define OF_AVX2 __attribute__((target("avx2,fma")))

namespace oneflow::cpu {

// Whether the CPU (and the OS, which must save the ymm registers) runs AVX2 and FMA; computed once.
inline bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace oneflow::cpu

#endif
