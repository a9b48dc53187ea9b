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

// Note [Transposing copies]
// The copy below goes row by row along the innermost dim in dst's order. Into a channels-last dst from a
// contiguous src (NCHW -> NHWC) that dim is the channels, whose elements lie a plane apart in src: with
// few channels the rows are short and their overhead dominates (ResNet's input at batch 16, 802,816 rows
// of 3 floats: 2.0 ms on 2 threads, twice per training step). Where the innermost dim is at most
// kShortInner long and the one outside it is contiguous in src, the copy goes in tiles of kTransposeTile
// indices of that outer dim instead, each inner index one run read contiguously and written at dst's
// stride, the tile's lines of dst in L1 until all inner indices have filled them: 0.48-0.57 ms for that
// input. (Tiles of longer inner dims, as in NHWC -> NCHW or a matrix transposed, met L1 set conflicts at
// power-of-two strides and were slower than the rows: a 512 x 512 transpose 10.8 -> 21.7 ms.)
constexpr int64_t kTransposeTile = 256;
constexpr int64_t kShortInner = 16;

// Whether the copy went so (l has >= 2 dims, a short innermost one, the next contiguous in src).
bool CopyTransposed(const Layout& l, const char* s, char* d, int64_t esize, ThreadPool* pool) {
  const size_t nd = l.sizes.size();
  if (nd < 2 || l.sizes[nd - 1] > kShortInner || l.src_strides[nd - 2] != 1) return false;
  const int64_t b = l.sizes[nd - 1], sb = l.src_strides[nd - 1], db = l.dst_strides[nd - 1];
  const int64_t a = l.sizes[nd - 2], da = l.dst_strides[nd - 2];
  const int64_t tiles = (a + kTransposeTile - 1) / kTransposeTile;
  int64_t outer = 1;  // every index of the dims outside the two
  for (size_t i = 0; i + 2 < nd; ++i) outer *= l.sizes[i];
  auto copy_tiles = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t rem = t / tiles, so = 0, dof = 0;
      for (size_t i = nd - 2; i-- > 0;) {
        so += rem % l.sizes[i] * l.src_strides[i];
        dof += rem % l.sizes[i] * l.dst_strides[i];
        rem /= l.sizes[i];
      }
      const int64_t a0 = t % tiles * kTransposeTile, count = std::min(kTransposeTile, a - a0);
      for (int64_t j = 0; j < b; ++j) {
        CopyRun(d + (dof + a0 * da + j * db) * esize, da * esize, s + (so + a0 + j * sb) * esize, esize, count, esize);
      }
    }
  };
  if (pool != nullptr && outer * a * b > (int64_t{1} << 16)) {
    pool->ParallelFor(outer * tiles, std::max<int64_t>(1, (int64_t{1} << 16) / (kTransposeTile * b)), copy_tiles);
  } else {
    copy_tiles(0, outer * tiles);
  }
  return true;
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
  if (CopyTransposed(l, s, d, esize, pool)) return;
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
