#include "core/tensor/copy.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/tensor/factory.h"

namespace oneflow {
namespace {

// The dims in dst's memory order (outermost first; so that the copy writes in order, as into a
// channels-last dst), adjacent dims merged where they are contiguous with each other in both tensors,
// size-1 dims dropped: most copies become a few long runs.
struct Layout {
  std::vector<int64_t> sizes, src_strides, dst_strides;
};

Layout Coalesce(const Tensor& src, const Tensor& dst) {
  Layout l;
  std::vector<int64_t> order(static_cast<size_t>(src.ndim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return dst.strides()[static_cast<size_t>(a)] > dst.strides()[static_cast<size_t>(b)];
  });
  for (int64_t i : order) {
    const int64_t size = src.shape()[i].value();
    if (size == 1) continue;
    const int64_t ss = src.strides()[static_cast<size_t>(i)], ds = dst.strides()[static_cast<size_t>(i)];
    if (!l.sizes.empty() && l.src_strides.back() == ss * size && l.dst_strides.back() == ds * size) {
      l.sizes.back() *= size;
      l.src_strides.back() = ss;
      l.dst_strides.back() = ds;
    } else {
      l.sizes.push_back(size);
      l.src_strides.push_back(ss);
      l.dst_strides.push_back(ds);
    }
  }
  return l;
}

// `count` elements of `esize` bytes at byte strides `dst_step` and `src_step` (one typed loop per
// element size instead of a memcpy call per element).
template <typename T>
void CopyRunOf(char* d, int64_t dst_step, const char* s, int64_t src_step, int64_t count) {
  for (int64_t j = 0; j < count; ++j) std::memcpy(d + j * dst_step, s + j * src_step, sizeof(T));
}
void CopyRun(char* d, int64_t dst_step, const char* s, int64_t src_step, int64_t count, int64_t esize) {
  switch (esize) {
    case 1: return CopyRunOf<uint8_t>(d, dst_step, s, src_step, count);
    case 2: return CopyRunOf<uint16_t>(d, dst_step, s, src_step, count);
    case 4: return CopyRunOf<uint32_t>(d, dst_step, s, src_step, count);
    case 8: return CopyRunOf<uint64_t>(d, dst_step, s, src_step, count);
    default:
      for (int64_t j = 0; j < count; ++j) std::memcpy(d + j * dst_step, s + j * src_step, static_cast<size_t>(esize));
  }
}

}  // namespace

void CopyStrided(const Tensor& src, const Tensor& dst, ThreadPool* pool) {
  OF_CHECK_INTERNAL(src.shape() == dst.shape() && src.dtype() == dst.dtype()) << "CopyStrided mismatch";
  OF_CHECK_INTERNAL(src.device() == dst.device()) << "CopyStrided between " << src.device() << " and " << dst.device();
  if (src.numel() == 0) return;
  const Layout l = Coalesce(src, dst);
  const auto esize = static_cast<int64_t>(src.dtype()->bytes());
  if (src.device().type != DeviceType::kCPU) {
    GetBackend(src.device())
        .CopyStrided(StridedCopy{dst.raw_data(), src.raw_data(), esize, l.sizes, l.src_strides, l.dst_strides});
    return;
  }
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  const int64_t nd = static_cast<int64_t>(l.sizes.size());
  if (nd == 0) {  // one element
    std::memcpy(d, s, static_cast<size_t>(esize));
    return;
  }
  // Rows: every index of the outer dims; each row is the innermost dim.
  const int64_t inner = l.sizes.back();
  const int64_t rows = src.numel() / inner;
  const int64_t sin = l.src_strides.back() * esize, din = l.dst_strides.back() * esize;
  auto copy_rows = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
    int64_t rem = begin;
    for (int64_t i = nd - 2; i >= 0; --i) {
      idx[static_cast<size_t>(i)] = rem % l.sizes[static_cast<size_t>(i)];
      rem /= l.sizes[static_cast<size_t>(i)];
    }
    for (int64_t r = begin; r < end; ++r) {
      int64_t so = 0, dof = 0;
      for (int64_t i = 0; i < nd - 1; ++i) {
        so += idx[static_cast<size_t>(i)] * l.src_strides[static_cast<size_t>(i)];
        dof += idx[static_cast<size_t>(i)] * l.dst_strides[static_cast<size_t>(i)];
      }
      const char* sp = s + so * esize;
      char* dp = d + dof * esize;
      if (sin == esize && din == esize) {
        std::memcpy(dp, sp, static_cast<size_t>(inner * esize));
      } else {
        CopyRun(dp, din, sp, sin, inner, esize);
      }
      for (int64_t i = nd - 2; i >= 0; --i) {  // next row index
        if (++idx[static_cast<size_t>(i)] < l.sizes[static_cast<size_t>(i)]) break;
        idx[static_cast<size_t>(i)] = 0;
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, inner));
  if (pool != nullptr && rows > grain) {
    pool->ParallelFor(rows, grain, copy_rows);
  } else {
    copy_rows(0, rows);
  }
}

TensorPtr CopyOf(const TensorPtr& src, ThreadPool* pool, MemoryFormat format) {
  TensorPtr dst = Empty(src->dtype(), src->shape(), src->device(), format);
  CopyStrided(*src, *dst, pool);
  return dst;
}

TensorPtr MakeContiguous(const TensorPtr& src, ThreadPool* pool) {
  return src->is_contiguous() ? src : CopyOf(src, pool);
}

}  // namespace oneflow
