// pad (F.pad: constant, reflect, replicate, circular) and its gradient op for the non-constant modes.
//
// Every mode is one gather: along each padded dim d, output coordinate c reads input coordinate
// table[d][c] (-1: the fill value, constant mode only); unpadded dims are the identity. The kernel
// walks rows of the output's last dim: an outer coordinate that maps to -1 fills the row, otherwise
// the row is the input row's middle copied as one block, with the padded cells at both ends looked up
// in the last dim's table. Elements move as bits (every dtype).
//
// The gradient of constant padding is a crop (pad by -pads, which the same op does). For the other
// modes pad_backward sums dy into dx with the transpose of the tables, computed as a gather over dx
// rows (each dx row is owned by one task: no races, a fixed order): the dy cells an input cell
// receives along the outer dims are the product of per-dim preimage lists, and along the last dim
// the middle adds as a contiguous block and the padded cells add to the cells they copied.
#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/ranges.h>

#include "core/op/dispatch.h"
#include "core/ops/cpu/element_bits.h"
#include "core/ops/cpu/elementwise_loops.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/register.h"
#include "core/ops/resample.h"
#include "core/tensor/factory.h"

namespace oneflow {
namespace {

using ops::PadMode;

constexpr int64_t kGrain = int64_t{1} << 15;

// The pads per dim of x: left[d], right[d] (0 for dims the pads do not reach).
struct PadSpec {
  PadMode mode;
  std::vector<int64_t> left, right;
  bool padded(int64_t d) const { return left[static_cast<size_t>(d)] != 0 || right[static_cast<size_t>(d)] != 0; }
};

std::string PadsText(const std::vector<int64_t>& pads) { return fmt::format("[{}]", fmt::join(pads, ", ")); }

// The attributes checked against x's rank and dtype; sizes are checked by CheckSizes.
PadSpec ParsePads(const Shape& x, Symbol<DType> dtype, const Attrs& attrs) {
  const std::vector<int64_t>& pads = attrs.Ints("pads");
  PadSpec s{ops::PadModeFromName(attrs.Get<std::string>("mode")), std::vector<int64_t>(static_cast<size_t>(x.ndim()), 0),
            std::vector<int64_t>(static_cast<size_t>(x.ndim()), 0)};
  const std::string_view mode = ops::PadModeName(s.mode);
  OF_CHECK(pads.size() % 2 == 0) << "pads " << PadsText(pads) << " has " << pads.size()
                                 << " entries; it must have an even number, a (left, right) pair per dim";
  OF_CHECK(static_cast<int64_t>(pads.size() / 2) <= x.ndim())
      << "pads " << PadsText(pads) << " has " << pads.size() / 2 << " (left, right) pairs but x " << x << " has only "
      << x.ndim() << " dims";
  const double value = attrs.Float("value");
  if (s.mode == PadMode::kConstant) {
    CheckRepresentable(value, dtype, "value");
  } else {
    OF_CHECK(value == 0) << "value is " << value << ", but " << mode << " padding takes no value (only constant does)";
  }
  for (size_t k = 0; k < pads.size(); ++k) {
    OF_CHECK(pads[k] != std::numeric_limits<int64_t>::min()) << "pads[" << k << "] is " << pads[k] << ", out of range";
    OF_CHECK(s.mode == PadMode::kConstant || pads[k] >= 0)
        << "pads[" << k << "] is " << pads[k] << "; " << mode << " padding needs pads >= 0 (only constant padding crops)";
    const size_t d = static_cast<size_t>(x.ndim() - 1 - static_cast<int64_t>(k / 2));
    (k % 2 == 0 ? s.left : s.right)[d] = pads[k];
  }
  return s;
}

// The padded size of dim d (known size n), checked against the mode's limits.
int64_t PaddedSize(const PadSpec& s, int64_t d, int64_t n, std::string_view what) {
  const int64_t l = s.left[static_cast<size_t>(d)], r = s.right[static_cast<size_t>(d)];
  const std::string_view mode = ops::PadModeName(s.mode);
  const auto pair = [&] { return fmt::format("({}, {})", l, r); };
  switch (s.mode) {
    case PadMode::kConstant: break;
    case PadMode::kReflect:
      OF_CHECK((l == 0 && r == 0) || (l < n && r < n))
          << "reflect padding of dim " << d << " of " << what << " (size " << n << ") needs each pad < " << n
          << ", got pads " << pair();
      break;
    case PadMode::kReplicate:
      OF_CHECK((l == 0 && r == 0) || n > 0)
          << "replicate padding of dim " << d << " of " << what << " needs a non-empty dim, got size 0 with pads " << pair();
      break;
    case PadMode::kCircular:
      OF_CHECK(l <= n && r <= n) << "circular padding of dim " << d << " of " << what << " (size " << n
                                 << ") needs each pad <= " << n << " (it wraps around once at most), got pads " << pair();
      break;
  }
  int64_t total = 0;
  OF_CHECK(!__builtin_add_overflow(n, l, &total) && !__builtin_add_overflow(total, r, &total))
      << "pads " << pair() << " of dim " << d << " (size " << n << ") of " << what << " overflow int64";
  OF_CHECK(total >= 0) << mode << " pads " << pair() << " of dim " << d << " of " << what << " (size " << n
                       << ") would give it the negative size " << total;
  return total;
}

// A dim the graph does not know: it stays itself when unpadded, else becomes unknown.
Dim PaddedDim(const PadSpec& s, int64_t d, Dim n, std::string_view what) {
  if (n.is_known()) return Dim(PaddedSize(s, d, n.value(), what));
  return s.padded(d) ? Dim::Unknown() : n;
}

std::vector<TensorMeta> InferPad(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& x = in[0];
  const PadSpec s = ParsePads(x.shape, x.dtype, attrs);
  Shape out = x.shape;
  for (int64_t d = 0; d < out.ndim(); ++d) out[d] = PaddedDim(s, d, x.shape[d], "x");
  return {{x.dtype, std::move(out), x.device}};
}

// Output coordinate -> input coordinate along dim d, -1 for the fill value; empty when unpadded.
std::vector<int64_t> PadTable(const PadSpec& s, int64_t d, int64_t n, int64_t out) {
  if (!s.padded(d)) return {};
  const int64_t l = s.left[static_cast<size_t>(d)];
  std::vector<int64_t> t(static_cast<size_t>(out));
  for (int64_t c = 0; c < out; ++c) {
    const int64_t i = c - l;  // |c - l| <= |out| + |l|: computed sizes fit, so this cannot overflow
    int64_t v = i;
    if (i < 0 || i >= n) {
      switch (s.mode) {
        case PadMode::kConstant: v = -1; break;
        case PadMode::kReflect: v = i < 0 ? -i : 2 * (n - 1) - i; break;
        case PadMode::kReplicate: v = i < 0 ? 0 : n - 1; break;
        case PadMode::kCircular: v = i < 0 ? i + n : i - n; break;
      }
    }
    t[static_cast<size_t>(c)] = v;
  }
  return t;
}

// The fill value's bits in an element of U (the dtype's size).
template <typename U>
U FillBits(Symbol<DType> dtype, double value) {
  U bits{};
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = cpu::Convert<T>(value);
    if constexpr (sizeof(T) == sizeof(U)) std::memcpy(&bits, &v, sizeof(U));
  });
  return bits;
}

void PadKernel(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &out = ctx.out(0);
  const PadSpec s = ParsePads(x.shape(), x.dtype(), ctx.attrs);
  const int64_t nd = out.ndim();
  if (out.numel() == 0) return;
  if (nd == 0) {
    std::memcpy(out.raw_data(), x.raw_data(), out.nbytes());
    return;
  }
  std::vector<std::vector<int64_t>> tables(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) {
    tables[static_cast<size_t>(d)] = PadTable(s, d, x.shape()[d].value(), out.shape()[d].value());
  }
  const std::vector<int64_t> strides = ContiguousStrides(x.shape());
  const int64_t cols = out.shape()[nd - 1].value(), rows = out.numel() / cols;
  const int64_t n = x.shape()[nd - 1].value(), l = s.left[static_cast<size_t>(nd - 1)];
  // The middle of each row: output columns [lo, hi) copy input columns [lo - l, hi - l).
  const int64_t lo = std::clamp<int64_t>(l, 0, cols), hi = std::clamp<int64_t>(l + n, lo, cols);
  const std::vector<int64_t>& last = tables[static_cast<size_t>(nd - 1)];
  cpu::VisitBits(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U fill = FillBits<U>(x.dtype(), ctx.attrs.Float("value"));
    const U* px = x.data<const U>();
    U* po = out.data<U>();
    ctx.pool.ParallelFor(rows, std::max<int64_t>(1, kGrain / cols), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        U* o = po + r * cols;
        int64_t rem = r, base = 0;
        bool filled = false;
        for (int64_t d = nd - 2; d >= 0 && !filled; --d) {
          const int64_t size = out.shape()[d].value(), c = rem % size;
          rem /= size;
          const std::vector<int64_t>& t = tables[static_cast<size_t>(d)];
          const int64_t i = t.empty() ? c : t[static_cast<size_t>(c)];
          filled = i < 0;
          base += i * strides[static_cast<size_t>(d)];
        }
        if (filled) {
          std::fill(o, o + cols, fill);
          continue;
        }
        const U* src = px + base;
        const auto edge = [&](int64_t c) {
          const int64_t i = last[static_cast<size_t>(c)];
          o[c] = i < 0 ? fill : src[i];
        };
        for (int64_t c = 0; c < lo; ++c) edge(c);
        if (hi > lo) std::memcpy(o + lo, src + (lo - l), static_cast<size_t>(hi - lo) * sizeof(U));
        for (int64_t c = hi; c < cols; ++c) edge(c);
      }
    });
  });
}

std::vector<TensorPtr> PadBackward(const BackwardContext& ctx) {
  static const OpDef& grad_op = OpRegistry::Global().Get("pad_backward");
  const TensorPtr& dy = ctx.grad_outputs[0];
  const std::vector<int64_t>& pads = ctx.attrs.Ints("pads");
  if (ops::PadModeFromName(ctx.attrs.Get<std::string>("mode")) == PadMode::kConstant) {
    std::vector<int64_t> crop(pads.size());
    for (size_t k = 0; k < pads.size(); ++k) crop[k] = -pads[k];  // ParsePads refused INT64_MIN
    return {ops::Pad(dy, crop, PadMode::kConstant, 0.0)};
  }
  return {Apply1(grad_op, {dy}, {{"pads", pads}, {"mode", ctx.attrs.Get<std::string>("mode")}})};
}

// ---- pad_backward (reflect, replicate, circular) ----------------------------------------------------

// x's size along dim d from dy's size m: m - left - right, which must be a size the pads fit.
int64_t UnpaddedSize(const PadSpec& s, int64_t d, int64_t m) {
  int64_t n = 0;  // pads >= 0: only the second subtraction can overflow
  OF_CHECK(!__builtin_sub_overflow(m - s.left[static_cast<size_t>(d)], s.right[static_cast<size_t>(d)], &n) && n >= 0)
      << "dy's dim " << d << " of size " << m << " is smaller than its pads ("
                   << s.left[static_cast<size_t>(d)] << ", " << s.right[static_cast<size_t>(d)] << ")";
  OF_CHECK(PaddedSize(s, d, n, "x") == m) << "dy's dim " << d << " is not a padded size";
  return n;
}

std::vector<TensorMeta> InferPadBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta& dy = in[0];
  OF_CHECK(dy.dtype->is_floating_point()) << "dy must be floating point, got " << dy.dtype;
  const PadSpec s = ParsePads(dy.shape, dy.dtype, attrs);
  OF_CHECK(s.mode != PadMode::kConstant) << "constant padding's gradient is a crop (pad with -pads), not this op";
  Shape x = dy.shape;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (dy.shape[d].is_known()) {
      x[d] = Dim(UnpaddedSize(s, d, dy.shape[d].value()));
    } else if (s.padded(d)) {
      x[d] = Dim::Unknown();
    }
  }
  return {{dy.dtype, std::move(x), dy.device}};
}

void PadBackwardKernel(KernelContext& ctx) {
  const Tensor &dy = ctx.in(0), &dx = ctx.out(0);
  const PadSpec s = ParsePads(dy.shape(), dy.dtype(), ctx.attrs);
  const int64_t nd = dx.ndim();
  if (dx.numel() == 0) return;
  if (nd == 0) {
    std::memcpy(dx.raw_data(), dy.raw_data(), dx.nbytes());
    return;
  }
  // Per outer dim, the dy coordinates each dx coordinate receives (empty: the identity).
  std::vector<std::vector<std::vector<int64_t>>> preimages(static_cast<size_t>(nd - 1));
  for (int64_t d = 0; d + 1 < nd; ++d) {
    const int64_t n = dx.shape()[d].value();
    const std::vector<int64_t> t = PadTable(s, d, n, dy.shape()[d].value());
    if (t.empty()) continue;
    std::vector<std::vector<int64_t>>& p = preimages[static_cast<size_t>(d)];
    p.resize(static_cast<size_t>(n));
    for (size_t c = 0; c < t.size(); ++c) p[static_cast<size_t>(t[c])].push_back(static_cast<int64_t>(c));
  }
  const std::vector<int64_t> dy_strides = ContiguousStrides(dy.shape());
  const int64_t cols = dx.shape()[nd - 1].value(), dy_cols = dy.shape()[nd - 1].value();
  const int64_t rows = dx.numel() / cols, l = s.left[static_cast<size_t>(nd - 1)];
  const std::vector<int64_t> last = PadTable(s, nd - 1, cols, dy_cols);
  VisitDType(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* pdy = dy.data<const T>();
      T* pdx = dx.data<T>();
      ctx.pool.ParallelFor(rows, std::max<int64_t>(1, kGrain / dy_cols), [&](int64_t b, int64_t e) {
        std::vector<T> acc(static_cast<size_t>(cols));
        std::vector<const std::vector<int64_t>*> lists(static_cast<size_t>(nd - 1));
        std::vector<int64_t> coord(static_cast<size_t>(nd - 1)), pos(static_cast<size_t>(nd - 1));
        for (int64_t r = b; r < e; ++r) {
          int64_t rem = r;
          for (int64_t d = nd - 2; d >= 0; --d) {
            const int64_t size = dx.shape()[d].value();
            coord[static_cast<size_t>(d)] = rem % size;
            rem /= size;
            const auto& p = preimages[static_cast<size_t>(d)];
            lists[static_cast<size_t>(d)] = p.empty() ? nullptr : &p[static_cast<size_t>(coord[static_cast<size_t>(d)])];
            pos[static_cast<size_t>(d)] = 0;
          }
          std::fill(acc.begin(), acc.end(), T(0));
          // Every combination of the outer preimages, odometer order.
          while (true) {
            int64_t base = 0;
            for (int64_t d = 0; d + 1 < nd; ++d) {
              const auto* list = lists[static_cast<size_t>(d)];
              const int64_t c = list ? (*list)[static_cast<size_t>(pos[static_cast<size_t>(d)])] : coord[static_cast<size_t>(d)];
              base += c * dy_strides[static_cast<size_t>(d)];
            }
            const T* g = pdy + base;
            for (int64_t i = 0; i < cols; ++i) acc[static_cast<size_t>(i)] += g[i + l];
            if (!last.empty()) {
              for (int64_t c = 0; c < l; ++c) acc[static_cast<size_t>(last[static_cast<size_t>(c)])] += g[c];
              for (int64_t c = l + cols; c < dy_cols; ++c) acc[static_cast<size_t>(last[static_cast<size_t>(c)])] += g[c];
            }
            int64_t d = nd - 2;
            for (; d >= 0; --d) {
              const auto* list = lists[static_cast<size_t>(d)];
              if (list && ++pos[static_cast<size_t>(d)] < static_cast<int64_t>(list->size())) break;
              pos[static_cast<size_t>(d)] = 0;
            }
            if (d < 0) break;
          }
          std::copy(acc.begin(), acc.end(), pdx + r * cols);
        }
      });
    }
  });
}

std::vector<TensorPtr> PadBackwardBackward(const BackwardContext& ctx) {
  return {ops::Pad(ctx.grad_outputs[0], ctx.attrs.Ints("pads"), ops::PadModeFromName(ctx.attrs.Get<std::string>("mode")))};
}

}  // namespace

namespace ops {

PadMode PadModeFromName(std::string_view name) {
  if (name == "constant") return PadMode::kConstant;
  if (name == "reflect") return PadMode::kReflect;
  if (name == "replicate") return PadMode::kReplicate;
  if (name == "circular") return PadMode::kCircular;
  OF_THROW(InvalidArgument) << "mode is \"" << name << "\"; expected \"constant\", \"reflect\", \"replicate\" or \"circular\"";
}

std::string_view PadModeName(PadMode mode) {
  switch (mode) {
    case PadMode::kConstant: return "constant";
    case PadMode::kReflect: return "reflect";
    case PadMode::kReplicate: return "replicate";
    case PadMode::kCircular: return "circular";
  }
  return "constant";
}

TensorPtr Pad(const TensorPtr& x, const std::vector<int64_t>& pads, PadMode mode, double value) {
  static const OpDef& op = OpRegistry::Global().Get("pad");
  return Apply1(op, {x}, {{"pads", pads}, {"mode", std::string(PadModeName(mode))}, {"value", value}});
}

}  // namespace ops

void RegisterPadOps(OpRegistry& registry) {
  const AttrSpec pads{"pads", std::vector<int64_t>{}, true};
  const AttrSpec mode{"mode", std::string("constant")};
  registry.Register(OpDef{.name = "pad", .inputs = {"x"}, .outputs = {"y"},
                          .attrs = {pads, mode, {"value", 0.0}}, .infer = InferPad, .backward = PadBackward,
                          .kernels = {{DeviceType::kCPU, kAllTypes, PadKernel}}});
  registry.Register(OpDef{.name = "pad_backward",
                          .inputs = {"dy"},
                          .outputs = {"dx"},
                          .attrs = {pads, mode, {"value", 0.0}},
                          .infer = InferPadBackward,
                          .backward = PadBackwardBackward,
                          .kernels = CpuKernels(kFloatingTypes, PadBackwardKernel)});
}

}  // namespace oneflow
