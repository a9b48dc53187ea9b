// Element copies by bits: ops that move elements without looking at their values (gather, scatter,
// flip, roll, slices) have one kernel per element size instead of one per dtype.
#pragma once

#include <cstdint>

#include "core/common/dtype.h"
#include "core/common/error.h"

namespace oneflow::cpu {

// Calls fn(U{}) with U an unsigned integer type of the dtype's size.
template <typename Fn>
void VisitBits(Symbol<DType> dtype, Fn&& fn) {
  switch (dtype->bytes()) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: OF_THROW(Internal) << "no element copy for " << dtype;
  }
}

}  // namespace oneflow::cpu
