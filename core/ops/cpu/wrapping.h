// Integer arithmetic that wraps around.
#pragma once

#include <type_traits>

namespace oneflow::cpu {

// Note [Wrapping integer arithmetic]
// Integer ops wrap around on overflow (two's complement, as PyTorch), but signed overflow is undefined
// behaviour in C++. So integer kernels add and multiply in WrapType<T>: an unsigned type at least as
// wide as T and as unsigned int (narrower unsigned types would promote to a signed int), where overflow
// is defined; converting the result back to T keeps its low bits (defined since C++20).
// Other types (floating, bool) are their own WrapType.
template <typename T>
struct WrapTypeOf {
  using type = T;
};
template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
struct WrapTypeOf<T> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <typename T>
using WrapType = typename WrapTypeOf<T>::type;

}  // namespace oneflow::cpu
