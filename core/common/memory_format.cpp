#include "core/common/memory_format.h"

#include <algorithm>
#include <array>

namespace oneflow {
namespace {

// Dims from innermost to outermost in memory.
constexpr std::array<int64_t, 4> kChannelsLastOrder = {1, 3, 2, 0};

bool UsesChannelsLast(const Shape& shape, MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast && shape.ndim() == 4;
}

}  // namespace

const char* MemoryFormatName(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? "channels_last" : "contiguous";
}

std::vector<int64_t> StridesFor(const Shape& shape, MemoryFormat format) {
  if (!UsesChannelsLast(shape, format)) return ContiguousStrides(shape);
  std::vector<int64_t> strides(4);
  int64_t stride = 1;
  for (int64_t d : kChannelsLastOrder) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= std::max<int64_t>(shape[d].value(), 1);
  }
  return strides;
}

bool IsDenseIn(const Shape& shape, std::span<const int64_t> strides, MemoryFormat format) {
  int64_t expected = 1;
  auto matches = [&](int64_t d) {
    const int64_t size = shape[d].value();
    if (size == 0) return true;
    if (size != 1 && strides[static_cast<size_t>(d)] != expected) return false;
    expected *= size;
    return true;
  };
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (shape[d].value() == 0) return true;  // empty: dense in any order
  }
  if (UsesChannelsLast(shape, format)) return std::all_of(kChannelsLastOrder.begin(), kChannelsLastOrder.end(), matches);
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    if (!matches(d)) return false;
  }
  return true;
}

MemoryFormat Canonical(const Shape& shape, MemoryFormat format) {
  if (!UsesChannelsLast(shape, format) || !shape.is_static()) return MemoryFormat::kContiguous;
  const bool differs = shape[1].value() > 1 && shape[2].value() * shape[3].value() > 1 && shape[0].value() > 0;
  return differs ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous;
}

}  // namespace oneflow
