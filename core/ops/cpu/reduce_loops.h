// The CPU reduction engine (private to the op library) that every reduction shares: core/ops/reduce.cpp
// (sum, mean, max, min, argmax, var, std) and core/ops/reduce_extra.cpp (prod, logsumexp, all, any,
// norm). See reduce.cpp's header comment for how a reduction is planned (RunReduce) and the reducer
// interface it calls.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "core/common/shape.h"
#include "core/device/thread_pool.h"
#include "core/op/attrs.h"
#include "core/tensor/tensor.h"

namespace oneflow::cpu::reduce {

// Elements per parallel chunk (simple operations each).
constexpr int64_t kGrain = int64_t{1} << 15;
// Columns one task of a column reduction accumulates at once (their accumulators stay in L2).
constexpr int64_t kColumnBlock = 8192;

// ---- shapes -----------------------------------------------------------------------------------------

// Which of x's dims `dims` reduces (empty = all). The dims were validated by ReduceShape in inference.
inline std::vector<bool> ReducedMask(int64_t ndim, const std::vector<int64_t>& dims) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) mask[static_cast<size_t>(NormalizeAxis(d, ndim, "reduction dim"))] = true;
  return mask;
}

// Which of x's dims sum_to_shape sums to reach `target` (x's shape broadcast from it): the leading dims x has
// beyond target's, and those where target has size 1.
inline std::vector<bool> SumToShapeMask(const Shape& x, const Shape& target) {
  const int64_t lead = x.ndim() - target.ndim();
  std::vector<bool> mask(static_cast<size_t>(x.ndim()));
  for (int64_t d = 0; d < x.ndim(); ++d) mask[static_cast<size_t>(d)] = d < lead || target[d - lead] == 1;
  return mask;
}

// The dims of `like` (ndim) that broadcast_like inserts: attr "dims" normalised, checked for repeats.
inline std::vector<bool> InsertedMask(int64_t ndim, const std::vector<int64_t>& dims) {
  std::vector<bool> mask(static_cast<size_t>(ndim), false);
  for (int64_t d : dims) {
    const int64_t a = NormalizeAxis(d, ndim, "inserted dim");
    OF_CHECK(!mask[static_cast<size_t>(a)]) << "inserted dim " << d << " appears more than once";
    mask[static_cast<size_t>(a)] = true;
  }
  return mask;
}

// broadcast_like's kernels (CPU and CUDA): y's strides over the output's dims (0 where inserted or broadcast)
// and the factor the output is multiplied by (1 / the broadcast factor for "mean", else 1).
inline std::vector<int64_t> BroadcastLikeStrides(const Tensor& y, const Shape& out, const std::vector<int64_t>& dims) {
  const std::vector<bool> inserted = InsertedMask(out.ndim(), dims);
  std::vector<int64_t> src(static_cast<size_t>(out.ndim()), 0);
  for (int64_t d = 0, j = 0; d < out.ndim(); ++d) {
    if (inserted[static_cast<size_t>(d)]) continue;
    if (y.shape()[j] != 1) src[static_cast<size_t>(d)] = y.strides()[static_cast<size_t>(j)];
    ++j;
  }
  return src;
}
inline double BroadcastLikeScale(const Tensor& y, const Tensor& out, const Attrs& attrs) {
  return attrs.Bool("mean") && out.numel() > 0 ? static_cast<double>(y.numel()) / static_cast<double>(out.numel())
                                               : 1.0;
}

// Reduced dims of `shape` whose size is known to be 0 make max/min/argmax undefined.
inline void CheckNonEmptyReduction(const Shape& shape, const std::vector<bool>& mask) {
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (mask[static_cast<size_t>(d)] && shape[d] == 0) {
      OF_THROW(InvalidArgument) << "cannot reduce over dim " << d << " of size 0 (input shape " << shape
                                << "): the reduction has no identity";
    }
  }
}

// For each dim of `shape`: its stride in the reduced output (contiguous over the kept dims), 0 where
// reduced. Reads a per-output value at each input position.
inline std::vector<int64_t> ReducedOutputStrides(const Shape& shape, const std::vector<bool>& mask) {
  std::vector<int64_t> strides(static_cast<size_t>(shape.ndim()), 0);
  int64_t s = 1;
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    if (mask[static_cast<size_t>(d)]) continue;
    strides[static_cast<size_t>(d)] = s;
    s *= shape[d].value();
  }
  return strides;
}

// ---- loops ------------------------------------------------------------------------------------------

struct Group {
  int64_t size;
  int64_t stride;
  bool reduced;
};

// Drops size-1 dims and merges neighbours with the same flag that are adjacent in memory.
inline std::vector<Group> Collapse(const Shape& shape, std::span<const int64_t> strides, const std::vector<bool>& mask) {
  std::vector<Group> out;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    const Group g{shape[d].value(), strides[static_cast<size_t>(d)], mask[static_cast<size_t>(d)]};
    if (g.size == 1) continue;
    if (!out.empty() && out.back().reduced == g.reduced && out.back().stride == g.stride * g.size) {
      out.back().size *= g.size;
      out.back().stride = g.stride;
    } else {
      out.push_back(g);
    }
  }
  return out;
}

inline int64_t CountOf(const std::vector<Group>& groups) {
  int64_t n = 1;
  for (const Group& g : groups) n *= g.size;
  return n;
}

// Walks the element offsets of a row-major index space over groups.
class Walker {
 public:
  explicit Walker(const std::vector<Group>& groups) : groups_(groups), index_(groups.size(), 0) {}
  void Seek(int64_t flat) {
    offset_ = 0;
    for (size_t d = groups_.size(); d-- > 0;) {
      const int64_t size = groups_[d].size;
      index_[d] = size == 0 ? 0 : flat % size;
      flat = size == 0 ? 0 : flat / size;
      offset_ += index_[d] * groups_[d].stride;
    }
  }
  void Next() {
    for (size_t d = groups_.size(); d-- > 0;) {
      if (++index_[d] < groups_[d].size) {
        offset_ += groups_[d].stride;
        return;
      }
      offset_ -= (groups_[d].size - 1) * groups_[d].stride;
      index_[d] = 0;
    }
  }
  int64_t offset() const { return offset_; }

 private:
  const std::vector<Group>& groups_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// x's dims split into the innermost group and the outer kept and reduced groups. Outputs are numbered
// row-major over the kept dims; the reduction space row-major over the reduced dims.
struct ReducePlan {
  std::vector<Group> kept, reduced;  // outer groups
  int64_t inner = 1, inner_stride = 1;
  bool inner_reduced = true;

  int64_t num_outputs() const { return CountOf(kept) * (inner_reduced ? 1 : inner); }
  int64_t num_reduced() const { return CountOf(reduced) * (inner_reduced ? inner : 1); }
};

inline ReducePlan MakeReducePlan(const Tensor& x, const std::vector<bool>& mask) {
  std::vector<Group> groups = Collapse(x.shape(), x.strides(), mask);
  ReducePlan plan;
  if (!groups.empty()) {
    plan.inner = groups.back().size;
    plan.inner_stride = groups.back().stride;
    plan.inner_reduced = groups.back().reduced;
    groups.pop_back();
  }
  for (const Group& g : groups) (g.reduced ? plan.reduced : plan.kept).push_back(g);
  return plan;
}

// Calls fn(i, n, src, src_stride) for runs covering a contiguous output of `shape` whose element at
// index idx reads the source element at sum(idx[d] * src_strides[d]): elements [i, i + n) read src,
// src + src_stride, ... (a broadcast when strides are 0).
template <typename Fn>
void ForEachRun(const Shape& shape, const std::vector<int64_t>& src_strides, ThreadPool& pool, Fn&& fn) {
  const int64_t numel = shape.numel();
  if (numel == 0) return;
  std::vector<Group> groups = Collapse(shape, src_strides, std::vector<bool>(static_cast<size_t>(shape.ndim())));
  Group inner{1, 0, false};
  if (!groups.empty()) {
    inner = groups.back();
    groups.pop_back();
  }
  const int64_t rows = numel / inner.size;
  pool.ParallelFor(rows, std::max<int64_t>(1, kGrain / inner.size), [&](int64_t begin, int64_t end) {
    Walker w(groups);
    w.Seek(begin);
    for (int64_t row = begin; row < end; ++row, w.Next()) fn(row * inner.size, inner.size, w.offset(), inner.stride);
  });
}

// A reducer R provides, for input element type T:
//   Acc Init(o)                      the accumulator of output o
//   Step(acc, v, i)                  folds in element v at reduction index i
//   Run(acc, p, n, stride, i0)       Step over p[0], p[stride], ... (n elements from index i0)
//   Merge(acc, other)                combines the accumulators of consecutive parts, in order
//   Finish(acc, o)                   the output value
template <typename R, typename T, typename Out>
void RunReduce(const ReducePlan& plan, const T* x, Out* out, const R& r, ThreadPool& pool) {
  using Acc = typename R::Acc;
  const int64_t n_out = plan.num_outputs(), n_red = plan.num_reduced();
  if (n_out == 0) return;
  const int64_t inner = plan.inner, s = plan.inner_stride;

  // Rows: folds the reduction indices [begin, end) starting at x + base into acc.
  auto fold_row = [&](Acc& acc, int64_t base, int64_t begin, int64_t end) {
    if (begin >= end) return;
    if (plan.reduced.empty()) {  // one run: no walker to set up per output
      r.Run(acc, x + base + begin * s, end - begin, s, begin);
      return;
    }
    Walker rw(plan.reduced);
    rw.Seek(begin / inner);
    int64_t j = begin % inner;
    while (begin < end) {
      const int64_t n = std::min(inner - j, end - begin);
      r.Run(acc, x + base + rw.offset() + j * s, n, s, begin);
      begin += n;
      j = 0;
      rw.Next();
    }
  };
  // Columns: folds the reduction indices [begin, end) into acc[0, n) of the columns c0.. at x + base.
  auto fold_columns = [&](Acc* acc, int64_t base, int64_t c0, int64_t n, int64_t begin, int64_t end) {
    Walker rw(plan.reduced);
    rw.Seek(begin);
    for (int64_t q = begin; q < end; ++q, rw.Next()) {
      const T* p = x + base + rw.offset() + c0 * s;
      if (s == 1) {
        int64_t k = 0;
        for (; k + 8 <= n; k += 8) {  // fixed-size blocks: vectorised at -O2 (SLP)
          for (int64_t j = 0; j < 8; ++j) r.Step(acc[k + j], p[k + j], q);
        }
        for (; k < n; ++k) r.Step(acc[k], p[k], q);
      } else {
        for (int64_t k = 0; k < n; ++k) r.Step(acc[k], p[k * s], q);
      }
    }
  };
  // Folds reduction indices [begin, end) of every output into acc[0, n_out).
  auto fold_all = [&](Acc* acc, int64_t begin, int64_t end) {
    Walker kw(plan.kept);
    kw.Seek(0);
    const int64_t blocks = CountOf(plan.kept);
    for (int64_t b = 0; b < blocks; ++b, kw.Next()) {
      if (plan.inner_reduced) {
        fold_row(acc[b], kw.offset(), begin, end);
      } else {
        fold_columns(acc + b * inner, kw.offset(), 0, inner, begin, end);
      }
    }
  };

  // Rows parallelise over outputs, columns over blocks of whole rows where they fit (streaming beats
  // striding). Too few of those for a large reduction: split the reduction (partials stay small).
  const int64_t per_block = (inner + kColumnBlock - 1) / kColumnBlock;  // column blocks per kept block
  const int64_t units = plan.inner_reduced ? n_out : CountOf(plan.kept) * per_block;
  const int64_t work = n_out * n_red;
  if (units < 8 && n_red > 1 && work >= 2 * kGrain) {
    // Reduce parts of the reduction space in parallel, then merge them in order.
    const int64_t parts = std::min<int64_t>({n_red, work / (4 * kGrain) + 1, 32});
    std::vector<Acc> partial;
    partial.reserve(static_cast<size_t>(parts * n_out));
    for (int64_t p = 0; p < parts; ++p) {
      for (int64_t o = 0; o < n_out; ++o) partial.push_back(r.Init(o));
    }
    pool.ParallelFor(parts, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) fold_all(partial.data() + p * n_out, p * n_red / parts, (p + 1) * n_red / parts);
    });
    for (int64_t o = 0; o < n_out; ++o) {
      Acc acc = partial[static_cast<size_t>(o)];
      for (int64_t p = 1; p < parts; ++p) r.Merge(acc, partial[static_cast<size_t>(p * n_out + o)]);
      out[o] = static_cast<Out>(r.Finish(acc, o));
    }
    return;
  }
  if (plan.inner_reduced) {
    pool.ParallelFor(n_out, std::max<int64_t>(1, kGrain / std::max<int64_t>(n_red, 1)), [&](int64_t begin, int64_t end) {
      Walker kw(plan.kept);
      kw.Seek(begin);
      for (int64_t o = begin; o < end; ++o, kw.Next()) {
        Acc acc = r.Init(o);
        fold_row(acc, kw.offset(), 0, n_red);
        out[o] = static_cast<Out>(r.Finish(acc, o));
      }
    });
    return;
  }
  const int64_t unit_work = std::min(inner, kColumnBlock) * std::max<int64_t>(n_red, 1);
  pool.ParallelFor(units, std::max<int64_t>(1, kGrain / unit_work), [&](int64_t begin, int64_t end) {
    Walker kw(plan.kept);
    std::vector<Acc> acc;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t b = u / per_block, c0 = (u % per_block) * kColumnBlock, n = std::min(kColumnBlock, inner - c0);
      kw.Seek(b);
      acc.clear();
      for (int64_t k = 0; k < n; ++k) acc.push_back(r.Init(b * inner + c0 + k));
      fold_columns(acc.data(), kw.offset(), c0, n, 0, n_red);
      for (int64_t k = 0; k < n; ++k) out[b * inner + c0 + k] = static_cast<Out>(r.Finish(acc[k], b * inner + c0 + k));
    }
  });
}

// ---- reducers ---------------------------------------------------------------------------------------

// Integer sums wrap around (Note [Wrapping integer arithmetic]): they accumulate in uint64 and the
// int64 result keeps the low 64 bits.
template <typename T>
using AccumulatorOf = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
constexpr bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  return false;
}

template <typename T>
struct SumReducer {
  using Acc = AccumulatorOf<T>;
  Acc Init(int64_t) const { return Acc(0); }
  void Step(Acc& a, T v, int64_t) const { a += static_cast<Acc>(v); }
  void Merge(Acc& a, Acc b) const { a += b; }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    if (stride != 1) {
      for (int64_t k = 0; k < n; ++k) a += static_cast<Acc>(p[k * stride]);
      return;
    }
    // Four independent partial sums: vectorisable and a little more accurate than one running sum.
    Acc s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
      s0 += static_cast<Acc>(p[k]);
      s1 += static_cast<Acc>(p[k + 1]);
      s2 += static_cast<Acc>(p[k + 2]);
      s3 += static_cast<Acc>(p[k + 3]);
    }
    for (; k < n; ++k) s0 += static_cast<Acc>(p[k]);
    a += (s0 + s1) + (s2 + s3);
  }
  Acc Finish(Acc a, int64_t) const { return a; }
};

template <typename T>
struct MeanReducer : SumReducer<T> {
  double count;
  explicit MeanReducer(double n) : count(n) {}
  double Finish(double a, int64_t) const { return a / count; }
};

// max (kMax) or min; NaN wins, as in PyTorch.
template <typename T, bool kMax>
struct ExtremeReducer {
  using Acc = T;
  static constexpr T kIdentity = kMax ? (std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                                                      : std::numeric_limits<T>::lowest())
                                      : (std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                                                      : std::numeric_limits<T>::max());
  Acc Init(int64_t) const { return kIdentity; }
  void Step(Acc& a, T v, int64_t) const { a = (kMax ? v > a : v < a) || IsNan(v) ? v : a; }  // a select: vectorisable
  void Merge(Acc& a, Acc b) const { Step(a, b, 0); }
  void Run(Acc& a, const T* p, int64_t n, int64_t stride, int64_t) const {
    int64_t k = 0;
    if (stride == 1 && n >= 16) {
      // Eight independent lanes: no loop-carried compare chain, and vectorisable.
      T lanes[8];
      for (int64_t j = 0; j < 8; ++j) lanes[j] = kIdentity;
      for (; k + 8 <= n; k += 8) {
        for (int64_t j = 0; j < 8; ++j) Step(lanes[j], p[k + j], 0);
      }
      for (int64_t j = 0; j < 8; ++j) Step(a, lanes[j], 0);
    }
    for (; k < n; ++k) Step(a, p[k * stride], 0);
  }
  Acc Finish(Acc a, int64_t) const { return a; }
};


}  // namespace oneflow::cpu::reduce
