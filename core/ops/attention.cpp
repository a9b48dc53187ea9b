// scaled_dot_product_attention: one fused CPU kernel (scores, mask, stable softmax, dropout, product
// with v) per (batch, block of query rows), and one fused backward kernel giving dq, dk and dv, the
// products of each block or tile by oneDNN's sgemm (float32) on the pool thread that owns it.
//
// The forward saves the row log-sum-exp of the masked, scaled scores ("lse") and the generator range
// its dropout drew from ("rng": key and first counter), so that the backward recomputes the
// probabilities tile by tile and regenerates the dropout mask instead of storing either (L, S) matrix.
// Dropout element (b, i, j) (b the flat output batch index) keeps when word f % 4 of Philox counter
// (first + f / 4) is >= p 2^32, f = (b L + i) S + j, as the dropout op does for flat indices.
#include "core/ops/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/common/philox.h"
#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/dnnl/sgemm.h"
#include "core/ops/register.h"

namespace oneflow {
namespace {

constexpr char kOp[] = "scaled_dot_product_attention";
constexpr char kBackwardOp[] = "scaled_dot_product_attention_backward";

// ---- inference -----------------------------------------------------------------------------------

// Two sizes that are known to differ (concrete, or distinct named symbols).
bool Mismatch(Dim a, Dim b) { return (a.is_known() && b.is_known() && a != b) || (a.is_symbol() && b.is_symbol() && a != b); }
Dim Pick(Dim a, Dim b) { return a.is_known() || !b.is_known() ? a : b; }

struct AttnShapes {
  Shape batch;  // the broadcast batch dims
  Dim l, s, e, ev;
};

Shape BatchOf(const Shape& s) { return Shape(std::vector<Dim>(s.begin(), s.end() - 2)); }

Shape AppendDims(Shape s, std::initializer_list<Dim> dims) {
  for (Dim d : dims) s.push_back(d);
  return s;
}

// Checks q, k, v and the mask (in[3], absent when its dtype is null) and the attributes.
AttnShapes InferShapes(std::span<const TensorMeta> in, const Attrs& attrs) {
  const TensorMeta &q = in[0], &k = in[1], &v = in[2], &mask = in[3];
  OF_CHECK(q.dtype->is_floating_point()) << "q must be floating point, got " << q.dtype;
  OF_CHECK(k.dtype == q.dtype && v.dtype == q.dtype)
      << "q, k and v must have one dtype, got " << q.dtype << ", " << k.dtype << " and " << v.dtype;
  OF_CHECK(q.shape.ndim() >= 2 && k.shape.ndim() >= 2 && v.shape.ndim() >= 2)
      << "q (..., L, E), k (..., S, E) and v (..., S, Ev) must have at least 2 dims, got q " << q.shape << ", k "
      << k.shape << " and v " << v.shape;
  const Shape &qs = q.shape, &ks = k.shape, &vs = v.shape;
  AttnShapes r;
  r.l = qs[qs.ndim() - 2];
  r.e = qs[qs.ndim() - 1];
  r.s = ks[ks.ndim() - 2];
  r.ev = vs[vs.ndim() - 1];
  const Dim ek = ks[ks.ndim() - 1], sv = vs[vs.ndim() - 2];
  OF_CHECK(!Mismatch(r.e, ek)) << "q " << qs << " has embedding size " << r.e << " but k " << ks << " has " << ek;
  OF_CHECK(!Mismatch(r.s, sv)) << "k " << ks << " has " << r.s << " keys but v " << vs << " has " << sv;
  r.e = Pick(r.e, ek);
  r.s = Pick(r.s, sv);
  try {
    r.batch = BroadcastShapes(BroadcastShapes(BatchOf(qs), BatchOf(ks)), BatchOf(vs));
  } catch (const Error& e) {
    OF_THROW(InvalidArgument) << "the batch dims of q " << qs << ", k " << ks << " and v " << vs
                              << " do not broadcast: " << e.message();
  }
  const double p = attrs.Float("dropout_p");
  OF_CHECK(p >= 0.0 && p < 1.0) << "dropout_p must be in [0, 1), got " << p;
  const double scale = attrs.Float("scale");
  OF_CHECK(std::isfinite(scale)) << "scale must be finite (0 = 1/sqrt(E)), got " << scale;
  if (mask.dtype) {
    OF_CHECK(!attrs.Bool("is_causal")) << "attn_mask and is_causal cannot both be given";
    OF_CHECK(mask.dtype == DType::Bool() || mask.dtype == q.dtype)
        << "attn_mask must be bool or of q's dtype " << q.dtype << ", got " << mask.dtype;
    const Shape target = AppendDims(r.batch, {r.l, r.s});
    bool ok = mask.shape.ndim() <= target.ndim();
    for (int64_t d = 1; ok && d <= mask.shape.ndim(); ++d) {
      const Dim m = mask.shape[mask.shape.ndim() - d], t = target[target.ndim() - d];
      ok = m == Dim(1) || !Mismatch(m, t);
    }
    OF_CHECK(ok) << "attn_mask " << mask.shape << " does not broadcast to the scores' shape " << target
                 << " (..., L, S)";
  }
  return r;
}

std::vector<TensorMeta> InferAttention(std::span<const TensorMeta> in, const Attrs& attrs) {
  const AttnShapes r = InferShapes(in, attrs);
  return {{in[0].dtype, AppendDims(r.batch, {r.l, r.ev}), in[0].device},
          {in[0].dtype, AppendDims(r.batch, {r.l}), in[0].device},
          {DType::Int64(), Shape{2}, in[0].device}};
}

// (dout, q, k, v, mask, out, lse, rng) -> dq, dk, dv over the broadcast batch dims.
std::vector<TensorMeta> InferAttentionBackward(std::span<const TensorMeta> in, const Attrs& attrs) {
  const AttnShapes r = InferShapes(in.subspan(1, 4), attrs);
  const std::vector<TensorMeta> fwd = InferAttention(in.subspan(1, 4), attrs);
  const auto check = [&](size_t i, const TensorMeta& expected, std::string_view name) {
    OF_CHECK(in[i].dtype == expected.dtype && in[i].shape == expected.shape)
        << name << " is " << in[i].dtype << " " << in[i].shape << ", expected " << expected.dtype << " "
        << expected.shape;
  };
  check(0, fwd[0], "dout");
  check(5, fwd[0], "out");
  check(6, fwd[1], "lse");
  check(7, fwd[2], "rng");
  const Symbol<DType> t = in[1].dtype;
  const Device dev = in[1].device;
  return {{t, AppendDims(r.batch, {r.l, r.e}), dev}, {t, AppendDims(r.batch, {r.s, r.e}), dev},
          {t, AppendDims(r.batch, {r.s, r.ev}), dev}};
}

// ---- the kernels' view of a call ------------------------------------------------------------------

// Row-major strides of `shape` aligned right to `rank` dims, 0 where a dim is missing or broadcast
// (size 1).
std::vector<int64_t> BroadcastStrides(const Shape& shape, size_t rank) {
  std::vector<int64_t> out(rank, 0);
  int64_t stride = 1;
  for (int64_t d = shape.ndim() - 1, o = static_cast<int64_t>(rank) - 1; d >= 0; --d, --o) {
    const int64_t size = shape[d].value();
    if (size != 1) out[static_cast<size_t>(o)] = stride;
    stride *= size;
  }
  return out;
}

struct Plan {
  int64_t nb = 1, l = 0, s = 0, e = 0, ev = 0;
  double scale = 1, p = 0;
  bool causal = false;
  const Tensor* mask = nullptr;
  bool mask_bool = false;
  int64_t m_rs = 0, m_cs = 0;  // the mask's strides along L and S (0 when broadcast)
  // Per output batch index: element offsets of its matrices in q, k, v and the mask.
  std::vector<int64_t> q_off, k_off, v_off, m_off;
  uint64_t key = 0, first = 0;  // the dropout's generator range
  uint32_t threshold = 0;       // drop when the bits are below it
  double keep_scale = 1;
};

Plan MakePlan(const KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
              const Shape& out_batch) {
  Plan p;
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  p.l = qs[qs.ndim() - 2].value();
  p.e = qs[qs.ndim() - 1].value();
  p.s = ks[ks.ndim() - 2].value();
  p.ev = vs[vs.ndim() - 1].value();
  const double scale = ctx.attrs.Float("scale");
  p.scale = scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(p.e, 1)));
  p.p = ctx.attrs.Float("dropout_p");
  p.causal = ctx.attrs.Bool("is_causal");
  p.threshold = static_cast<uint32_t>(std::min(std::ceil(p.p * 4294967296.0), 4294967295.0));
  p.keep_scale = 1.0 / (1.0 - p.p);
  const size_t rank = static_cast<size_t>(out_batch.ndim());
  std::vector<int64_t> bdims;
  for (int64_t d = 0; d < out_batch.ndim(); ++d) bdims.push_back(out_batch[d].value());
  for (int64_t d : bdims) p.nb *= d;
  const std::vector<int64_t> qb = BroadcastStrides(BatchOf(qs), rank), kb = BroadcastStrides(BatchOf(ks), rank),
                             vb = BroadcastStrides(BatchOf(vs), rank);
  std::vector<int64_t> mb(rank + 2, 0);
  if (mask != nullptr) {
    p.mask = mask;
    p.mask_bool = mask->dtype() == DType::Bool();
    mb = BroadcastStrides(mask->shape(), rank + 2);
    p.m_rs = mb[rank];
    p.m_cs = mb[rank + 1];
  }
  const int64_t q_mat = p.l * p.e, k_mat = p.s * p.e, v_mat = p.s * p.ev;
  for (int64_t b = 0; b < p.nb; ++b) {
    int64_t rest = b, qo = 0, ko = 0, vo = 0, mo = 0;
    for (size_t d = rank; d-- > 0;) {
      const int64_t idx = rest % bdims[d];
      rest /= bdims[d];
      qo += idx * qb[d];
      ko += idx * kb[d];
      vo += idx * vb[d];
      mo += idx * mb[d];
    }
    p.q_off.push_back(qo * q_mat);
    p.k_off.push_back(ko * k_mat);
    p.v_off.push_back(vo * v_mat);
    p.m_off.push_back(mo);
  }
  return p;
}

// Four partial sums, so that the compiler can keep them in vector lanes.
template <typename A, typename T>
inline A Dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  A s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += static_cast<A>(a[k]) * static_cast<A>(b[k]);
    s1 += static_cast<A>(a[k + 1]) * static_cast<A>(b[k + 1]);
    s2 += static_cast<A>(a[k + 2]) * static_cast<A>(b[k + 2]);
    s3 += static_cast<A>(a[k + 3]) * static_cast<A>(b[k + 3]);
  }
  for (; k < n; ++k) s0 += static_cast<A>(a[k]) * static_cast<A>(b[k]);
  return (s0 + s1) + (s2 + s3);
}

// The dropout factors of row i's keys [j0, j1) of batch b: 0 or 1 / (1 - p).
template <typename A>
void DropoutRow(const Plan& p, int64_t b, int64_t i, int64_t j0, int64_t j1, A* z) {
  const uint64_t row = static_cast<uint64_t>((b * p.l + i) * p.s);
  const A kept = static_cast<A>(p.keep_scale);
  uint64_t group = ~uint64_t{0};
  std::array<uint32_t, 4> bits{};
  for (int64_t j = j0; j < j1; ++j) {
    const uint64_t f = row + static_cast<uint64_t>(j);
    if (f / 4 != group) {
      group = f / 4;
      bits = Philox4x32(p.key, 0, p.first + group);
    }
    z[j - j0] = bits[f % 4] >= p.threshold ? kept : A(0);
  }
}

// C (m x n, row stride ldc) = alpha op(A) op(B) + beta C, all row-major, op transposing when asked.
// float: oneDNN's sgemm (JIT-compiled for the machine), run on the calling thread alone (the kernels
// parallelise over their work items on the session's pool); double: loops.
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  dnnl_util::SgemmAlone(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    double* __restrict ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) ci[j] = beta == 0.0 ? 0.0 : beta * ci[j];
    for (int64_t q = 0; q < k; ++q) {
      const double av = alpha * (ta ? a[q * lda + i] : a[i * lda + q]);
      if (tb) {
        for (int64_t j = 0; j < n; ++j) ci[j] += av * b[j * ldb + q];
      } else {
        const double* __restrict bq = b + q * ldb;
        for (int64_t j = 0; j < n; ++j) ci[j] += av * bq[j];
      }
    }
  }
}

// Row i of batch b, keys [j0, j1): s holds q_i . k_j on entry and the scaled, masked scores on return
// (-inf where not attended).
template <typename T, typename A>
void MaskRow(const Plan& p, int64_t b, int64_t i, int64_t j0, int64_t j1, A* s) {
  const A scale = static_cast<A>(p.scale);
  const A neg_inf = -std::numeric_limits<A>::infinity();
  for (int64_t j = j0; j < j1; ++j) s[j - j0] *= scale;
  if (p.causal) {
    for (int64_t j = std::max(j0, i + 1); j < j1; ++j) s[j - j0] = neg_inf;
  }
  if (p.mask == nullptr) return;
  const int64_t mrow = p.m_off[static_cast<size_t>(b)] + i * p.m_rs;
  if (p.mask_bool) {
    const bool* m = p.mask->data<const bool>() + mrow;
    for (int64_t j = j0; j < j1; ++j) {
      if (!m[j * p.m_cs]) s[j - j0] = neg_inf;
    }
  } else {
    const T* m = p.mask->data<const T>() + mrow;
    for (int64_t j = j0; j < j1; ++j) s[j - j0] += static_cast<A>(m[j * p.m_cs]);
  }
}

// Query rows per forward work item, and the tile sizes of the backward.
constexpr int64_t kRowBlock = 32;
constexpr int64_t kTile = 64;

// Grain (work items per chunk) for items of `cost` multiply-adds each.
int64_t GrainFor(int64_t cost) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(cost, 1)); }

template <typename T>
void AttentionForward(KernelContext& ctx, Plan& plan) {
  const Plan& p = plan;
  const T* q = ctx.in(0).data<const T>();
  const T* k = ctx.in(1).data<const T>();
  const T* v = ctx.in(2).data<const T>();
  T* out = ctx.out(0).data<T>();
  T* lse = ctx.out(1).data<T>();
  const int64_t blocks = (p.l + kRowBlock - 1) / kRowBlock;
  ctx.pool.ParallelFor(p.nb * blocks, GrainFor(kRowBlock * p.s * (p.e + p.ev)), [&](int64_t begin, int64_t end) {
    // Per thread: the block's scores, then its attention weights; one row's dropout factors.
    std::vector<T> s(static_cast<size_t>(kRowBlock * p.s)), z(static_cast<size_t>(p.p > 0 ? p.s : 0));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, i0 = (item % blocks) * kRowBlock, i1 = std::min(p.l, i0 + kRowBlock);
      // Keys a causal block cannot attend to are never computed.
      const int64_t jn = p.causal ? std::min(p.s, i1) : p.s;
      const T* kb = k + p.k_off[static_cast<size_t>(b)];
      Gemm(false, true, i1 - i0, jn, p.e, T(1), q + p.q_off[static_cast<size_t>(b)] + i0 * p.e, p.e, kb, p.e, T(0),
           s.data(), jn);
      for (int64_t i = i0; i < i1; ++i) {
        T* si = s.data() + (i - i0) * jn;
        MaskRow<T>(p, b, i, 0, jn, si);
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < jn; ++j) m = std::max(m, si[j]);
        if (m == -std::numeric_limits<T>::infinity()) {  // no key attended: zeros
          std::fill(si, si + jn, T(0));
          lse[b * p.l + i] = -std::numeric_limits<T>::infinity();
          continue;
        }
        T sum = 0;
        for (int64_t j = 0; j < jn; ++j) {
          si[j] = std::exp(si[j] - m);
          sum += si[j];
        }
        lse[b * p.l + i] = m + std::log(sum);
        const T inv = T(1) / sum;
        for (int64_t j = 0; j < jn; ++j) si[j] *= inv;
        if (p.p > 0) {
          DropoutRow(p, b, i, 0, jn, z.data());
          for (int64_t j = 0; j < jn; ++j) si[j] *= z[static_cast<size_t>(j)];
        }
      }
      Gemm(false, false, i1 - i0, p.ev, jn, T(1), s.data(), jn, v + p.v_off[static_cast<size_t>(b)], p.ev, T(0),
           out + (b * p.l + i0) * p.ev, p.ev);
    }
  });
}

void AttentionKernel(KernelContext& ctx) {
  const Tensor* mask = ctx.inputs[3] ? &ctx.in(3) : nullptr;
  const Shape& os = ctx.out(0).shape();
  Plan plan = MakePlan(ctx, ctx.in(0), ctx.in(1), ctx.in(2), mask, BatchOf(os));
  if (plan.p > 0) {
    const Generator::Range range = ctx.generator.Reserve(static_cast<uint64_t>((plan.nb * plan.l * plan.s + 3) / 4));
    plan.key = range.key;
    plan.first = range.first_counter;
  }
  int64_t* rng = ctx.out(2).data<int64_t>();
  rng[0] = static_cast<int64_t>(plan.key);
  rng[1] = static_cast<int64_t>(plan.first);
  VisitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) AttentionForward<T>(ctx, plan);
  });
}

// One tile of the backward: rows [i0, i1) x keys [j0, j1) of batch b. Fills, row-major (i1 - i0) x
// (j1 - j0): pd = the dropped-out probabilities and ds = the scores' gradient (before the scale).
template <typename T>
void BackwardTile(const Plan& p, const T* q, const T* k, const T* v, const T* dout, const T* lse, const T* delta,
                  int64_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1, T* pd, T* ds, T* z) {
  const int64_t r = i1 - i0, w = j1 - j0;
  Gemm(false, true, r, w, p.e, T(1), q + p.q_off[static_cast<size_t>(b)] + i0 * p.e, p.e,
       k + p.k_off[static_cast<size_t>(b)] + j0 * p.e, p.e, T(0), pd, w);
  Gemm(false, true, r, w, p.ev, T(1), dout + (b * p.l + i0) * p.ev, p.ev,  // dP = dout v^T
       v + p.v_off[static_cast<size_t>(b)] + j0 * p.ev, p.ev, T(0), ds, w);
  for (int64_t i = i0; i < i1; ++i) {
    T* pdi = pd + (i - i0) * w;
    T* dsi = ds + (i - i0) * w;
    const T li = lse[b * p.l + i];
    if (!(li > -std::numeric_limits<T>::infinity())) {  // a row that attended nothing
      std::fill(pdi, pdi + w, T(0));
      std::fill(dsi, dsi + w, T(0));
      continue;
    }
    MaskRow<T>(p, b, i, j0, j1, pdi);
    if (p.p > 0) DropoutRow(p, b, i, j0, j1, z);
    const T di = delta[b * p.l + i];
    for (int64_t j = 0; j < w; ++j) {
      const T prob = std::exp(pdi[j] - li);
      const T zj = p.p > 0 ? z[j] : T(1);
      pdi[j] = prob * zj;
      dsi[j] = prob * (dsi[j] * zj - di);
    }
  }
}

template <typename T>
void AttentionBackward(KernelContext& ctx, const Plan& p) {
  const T* dout = ctx.in(0).data<const T>();
  const T* q = ctx.in(1).data<const T>();
  const T* k = ctx.in(2).data<const T>();
  const T* v = ctx.in(3).data<const T>();
  const T* out = ctx.in(5).data<const T>();
  const T* lse = ctx.in(6).data<const T>();
  T* dq = ctx.out(0).data<T>();
  T* dk = ctx.out(1).data<T>();
  T* dv = ctx.out(2).data<T>();
  // delta_i = dout_i . out_i = sum_j dP_ij P_ij, the softmax backward's row term (dropout included).
  std::vector<T> delta(static_cast<size_t>(p.nb * p.l));
  ctx.pool.ParallelFor(p.nb * p.l, GrainFor(p.ev), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) delta[static_cast<size_t>(r)] = Dot<T>(dout + r * p.ev, out + r * p.ev, p.ev);
  });
  const T scale = static_cast<T>(p.scale);
  const int64_t qblocks = (p.l + kTile - 1) / kTile, kblocks = (p.s + kTile - 1) / kTile;
  const int64_t tile_cost = kTile * kTile * (p.e + p.ev) * 2;
  const size_t tile = static_cast<size_t>(kTile * kTile);
  // dq = scale dS k, per block of query rows.
  ctx.pool.ParallelFor(p.nb * qblocks, GrainFor(tile_cost * kblocks), [&](int64_t begin, int64_t end) {
    std::vector<T> pd(tile), ds(tile), z(kTile);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / qblocks, i0 = (item % qblocks) * kTile, i1 = std::min(p.l, i0 + kTile);
      T* dqb = dq + (b * p.l + i0) * p.e;
      std::fill(dqb, dqb + (i1 - i0) * p.e, T(0));
      for (int64_t j0 = 0; j0 < p.s && !(p.causal && j0 > i1 - 1); j0 += kTile) {
        const int64_t j1 = std::min(p.s, j0 + kTile), w = j1 - j0;
        BackwardTile(p, q, k, v, dout, lse, delta.data(), b, i0, i1, j0, j1, pd.data(), ds.data(), z.data());
        Gemm(false, false, i1 - i0, p.e, w, scale, ds.data(), w, k + p.k_off[static_cast<size_t>(b)] + j0 * p.e, p.e,
             T(1), dqb, p.e);
      }
    }
  });
  // dv = pd^T dout and dk = scale dS^T q, per block of keys.
  ctx.pool.ParallelFor(p.nb * kblocks, GrainFor(tile_cost * qblocks), [&](int64_t begin, int64_t end) {
    std::vector<T> pd(tile), ds(tile), z(kTile);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / kblocks, j0 = (item % kblocks) * kTile, j1 = std::min(p.s, j0 + kTile), w = j1 - j0;
      T* dkb = dk + (b * p.s + j0) * p.e;
      T* dvb = dv + (b * p.s + j0) * p.ev;
      std::fill(dkb, dkb + w * p.e, T(0));
      std::fill(dvb, dvb + w * p.ev, T(0));
      for (int64_t i0 = p.causal ? j0 : 0; i0 < p.l; i0 += kTile) {
        const int64_t i1 = std::min(p.l, i0 + kTile), r = i1 - i0;
        BackwardTile(p, q, k, v, dout, lse, delta.data(), b, i0, i1, j0, j1, pd.data(), ds.data(), z.data());
        Gemm(true, false, w, p.ev, r, T(1), pd.data(), w, dout + (b * p.l + i0) * p.ev, p.ev, T(1), dvb, p.ev);
        Gemm(true, false, w, p.e, r, scale, ds.data(), w, q + p.q_off[static_cast<size_t>(b)] + i0 * p.e, p.e, T(1),
             dkb, p.e);
      }
    }
  });
}

void AttentionBackwardKernel(KernelContext& ctx) {
  const Tensor* mask = ctx.inputs[4] ? &ctx.in(4) : nullptr;
  Plan plan = MakePlan(ctx, ctx.in(1), ctx.in(2), ctx.in(3), mask, BatchOf(ctx.out(0).shape()));
  const int64_t* rng = ctx.in(7).data<const int64_t>();
  plan.key = static_cast<uint64_t>(rng[0]);
  plan.first = static_cast<uint64_t>(rng[1]);
  VisitDType(ctx.in(1).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) AttentionBackward<T>(ctx, plan);
  });
}

TensorPtr SumTo(const TensorPtr& g, const Shape& shape) { return g->shape() == shape ? g : ops::SumToShape(g, shape); }

std::vector<TensorPtr> AttentionBackwardFn(const BackwardContext& ctx) {
  static const OpDef& op = OpRegistry::Global().Get(kBackwardOp);
  if (!ctx.grad_outputs[0]) return {nullptr, nullptr, nullptr, nullptr};
  const std::vector<TensorPtr> g =
      Apply(op, {ctx.grad_outputs[0], ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.inputs[3], ctx.outputs[0],
                 ctx.outputs[1], ctx.outputs[2]},
            ctx.attrs);
  std::vector<TensorPtr> grads(4);
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.needs_input_grad[i]) grads[i] = SumTo(g[i], ctx.inputs[i]->shape());
  }
  return grads;
}

}  // namespace

namespace ops {

TensorPtr ScaledDotProductAttention(const TensorPtr& q, const TensorPtr& k, const TensorPtr& v,
                                    const TensorPtr& attn_mask, const AttentionOptions& options) {
  static const OpDef& op = OpRegistry::Global().Get(kOp);
  return Apply(op, {q, k, v, attn_mask},
               {{"dropout_p", options.dropout_p}, {"is_causal", options.is_causal}, {"scale", options.scale}})[0];
}

}  // namespace ops

void RegisterAttentionOps(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {{"dropout_p", 0.0}, {"is_causal", false}, {"scale", 0.0}};
  registry.Register(OpDef{.name = kOp,
                          .inputs = {"q", "k", "v", "attn_mask"},
                          .optional_inputs = {"attn_mask"},
                          .outputs = {"out", "lse", "rng"},
                          .attrs = attrs,
                          .infer = InferAttention,
                          .backward = AttentionBackwardFn,
                          .kernels = CpuKernels(kFloatingTypes, AttentionKernel)});
  registry.Register(OpDef{.name = kBackwardOp,
                          .inputs = {"dout", "q", "k", "v", "attn_mask", "out", "lse", "rng"},
                          .optional_inputs = {"attn_mask"},
                          .outputs = {"dq", "dk", "dv"},
                          .attrs = attrs,
                          .infer = InferAttentionBackward,
                          .kernels = CpuKernels(kFloatingTypes, AttentionBackwardKernel),
                          .dtype_input = 1});
}

}  // namespace oneflow
