// matmul and linear: oneDNN's matmul primitive for float32, C++ loops for float64 and the integer
// dtypes (int8, uint8, int16, int32, int64: results in that dtype, wrapping around on overflow as
// PyTorch's; not differentiable, as integer tensors never require grad).
//
// The registered "matmul" op takes operands of >= 2 dims with optional transposes (what backward
// needs) and broadcasts batch dims; ops::Matmul adds NumPy's 1-D cases on top. Its kernel reads
// operands that are contiguous or transposed views of contiguous tensors without copying.
#include <algorithm>
#include <type_traits>

#include "core/op/dispatch.h"
#include "core/ops/cpu/in_float32.h"
#include "core/ops/cpu/wrapping.h"
#include "core/ops/dnnl/dnnl_common.h"
#include "core/ops/matmul_plan.h"
#include "core/ops/ops.h"

namespace oneflow {
namespace {

using namespace dnnl_util;

const OpDef& MatmulOp() {
  static const OpDef& op = OpRegistry::Global().Get("matmul");
  return op;
}

// op(a) @ op(b), op transposing the last two dims when asked.
TensorPtr MatmulT(const TensorPtr& a, const TensorPtr& b, bool ta, bool tb) {
  return Apply1(MatmulOp(), {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
}

void CheckInner(Dim ka, Dim kb, const Shape& a, const Shape& b, bool ta, bool tb) {
  if (ka.is_known() && kb.is_known() && ka != kb) {
    OF_THROW(InvalidArgument) << "a " << a << (ta ? " (transposed)" : "") << " and b " << b
                              << (tb ? " (transposed)" : "") << " cannot be multiplied: a has " << ka
                              << " columns but b has " << kb << " rows";
  }
}

// Operands of one number dtype (a number dtype without a kernel is UNIMPLEMENTED, from dispatch).
void CheckSameDType(const TensorMeta& a, const TensorMeta& b, std::string_view an, std::string_view bn) {
  OF_CHECK(a.dtype == b.dtype) << an << " is " << a.dtype << " but " << bn << " is " << b.dtype
                               << "; both must have one dtype";
  CheckNumeric(a, an);
}

Shape BatchOf(const Shape& s) { return Shape(std::vector<Dim>(s.begin(), s.end() - 2)); }

std::vector<TensorMeta> InferMatmul(std::span<const TensorMeta> in, const Attrs& attrs) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  CheckSameDType(in[0], in[1], "a", "b");
  OF_CHECK(a.ndim() >= 2 && b.ndim() >= 2) << "operands must have at least 2 dims, got a " << a << " and b " << b;
  const bool ta = attrs.Bool("transpose_a"), tb = attrs.Bool("transpose_b");
  const Dim m = a[a.ndim() - (ta ? 1 : 2)], ka = a[a.ndim() - (ta ? 2 : 1)];
  const Dim kb = b[b.ndim() - (tb ? 1 : 2)], n = b[b.ndim() - (tb ? 2 : 1)];
  CheckInner(ka, kb, a, b, ta, tb);
  Shape out;
  try {
    out = BroadcastShapes(BatchOf(a), BatchOf(b));
  } catch (const Error& e) {
    OF_THROW(InvalidArgument) << "the batch dims of a " << a << " and b " << b << " do not broadcast: " << e.message();
  }
  out.push_back(m);
  out.push_back(n);
  return {{in[0].dtype, out, in[0].device}};
}

std::vector<TensorMeta> InferLinear(std::span<const TensorMeta> in, const Attrs&) {
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  CheckSameDType(in[0], in[1], "x", "weight");
  OF_CHECK(x.ndim() >= 1) << "x must have at least 1 dim, got " << x;
  OF_CHECK(w.ndim() == 2) << "weight must be 2-D (out_features, in_features), got " << w;
  const Dim k = x[x.ndim() - 1];
  if (k.is_known() && w[1].is_known() && k != w[1]) {
    OF_THROW(InvalidArgument) << "x " << x << " has " << k << " features but weight " << w << " expects " << w[1];
  }
  if (in[2].dtype) {
    CheckSameDType(in[0], in[2], "x", "bias");
    const Shape& bias = in[2].shape;
    OF_CHECK(bias.ndim() == 1 && !(bias[0].is_known() && w[0].is_known() && bias[0] != w[0]))
        << "bias must be 1-D with out_features = " << w[0] << " elements, got " << bias;
  }
  Shape out = x;
  out[x.ndim() - 1] = w[0];
  return {{in[0].dtype, out, in[0].device}};
}

// Dims and strides of one operand's matrices under the plan (dense over its batch dims).
memory::desc MatDesc(const memory::dims& batch, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  memory::dims dims = batch, strides(batch.size());
  dims.push_back(rows);
  dims.push_back(cols);
  int64_t s = rows * cols;
  for (size_t i = batch.size(); i-- > 0;) {
    strides[i] = s;
    s *= batch[i];
  }
  strides.push_back(rs);
  strides.push_back(cs);
  return memory::desc(dims, memory::data_type::f32, strides);
}

// The memory objects of one execution, pointed at each call's data: creating oneDNN memory objects
// costs about as much as a tiny product, so sets are kept for reuse.
struct MatmulArgs {
  memory src, weights, dst, bias, scratch;
  size_t scratch_size = 0;
  std::unordered_map<int, memory> map;
};
struct MatmulArgsPool {
  std::mutex mutex;
  std::vector<std::unique_ptr<MatmulArgs>> free;
};

struct MatmulEntry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  std::shared_ptr<MatmulArgsPool> args;
};
PrimitiveCache<MatmulEntry>& MatmulCache() {
  static auto* cache = new PrimitiveCache<MatmulEntry>();
  return *cache;
}

std::unique_ptr<MatmulArgs> TakeArgs(const MatmulEntry& e, bool bias) {
  {
    std::lock_guard<std::mutex> lock(e.args->mutex);
    if (!e.args->free.empty()) {
      std::unique_ptr<MatmulArgs> args = std::move(e.args->free.back());
      e.args->free.pop_back();
      return args;
    }
  }
  auto args = std::make_unique<MatmulArgs>();
  args->src = memory(e.pd.src_desc(), Engine(), DNNL_MEMORY_NONE);
  args->weights = memory(e.pd.weights_desc(), Engine(), DNNL_MEMORY_NONE);
  args->dst = memory(e.pd.dst_desc(), Engine(), DNNL_MEMORY_NONE);
  args->scratch = memory(e.pd.scratchpad_desc(), Engine(), DNNL_MEMORY_NONE);
  args->scratch_size = e.pd.scratchpad_desc().get_size();
  args->map = {{DNNL_ARG_SRC, args->src},
               {DNNL_ARG_WEIGHTS, args->weights},
               {DNNL_ARG_DST, args->dst},
               {DNNL_ARG_SCRATCHPAD, args->scratch}};
  if (bias) {
    args->bias = memory(e.pd.bias_desc(), Engine(), DNNL_MEMORY_NONE);
    args->map.emplace(DNNL_ARG_BIAS, args->bias);
  }
  return args;
}

}  // namespace

void dnnl_util::RunGemmF32(KernelContext& ctx, const GemmPlan& p, const void* a, const void* b, const void* bias,
                           void* c) {
  const int64_t batch = Product(p.batch);
  const Exec exec = PrepareExec(ctx.pool, batch * p.m * p.n * p.k / 8);
  Key key = {exec.threads, p.m, p.k, p.n, p.a_rs, p.a_cs, p.b_rs, p.b_cs, bias != nullptr,
             static_cast<int64_t>(p.batch.size())};
  key.insert(key.end(), p.a_batch.begin(), p.a_batch.end());
  key.insert(key.end(), p.b_batch.begin(), p.b_batch.end());
  auto entry = MatmulCache().Get(key, [&] {
    const memory::desc a_md = MatDesc(p.a_batch, p.m, p.k, p.a_rs, p.a_cs);
    const memory::desc b_md = MatDesc(p.b_batch, p.k, p.n, p.b_rs, p.b_cs);
    const memory::desc c_md = MatDesc(p.batch, p.m, p.n, p.n, 1);
    memory::dims bias_dims(p.batch.size() + 2, 1);
    bias_dims.back() = p.n;
    auto desc = bias ? dnnl::matmul::desc(a_md, b_md, PlainDesc(bias_dims), c_md) : dnnl::matmul::desc(a_md, b_md, c_md);
    dnnl::matmul::primitive_desc pd(desc, DefaultAttr(), Engine());
    return MatmulEntry{pd, dnnl::matmul(pd), std::make_shared<MatmulArgsPool>()};
  });
  std::unique_ptr<MatmulArgs> args = TakeArgs(*entry, bias != nullptr);
  args->src.set_data_handle(const_cast<void*>(a));
  args->weights.set_data_handle(const_cast<void*>(b));
  args->dst.set_data_handle(c);
  if (bias) args->bias.set_data_handle(const_cast<void*>(bias));
  if (args->scratch_size > 0) args->scratch.set_data_handle(Buffer(kSlotScratch, args->scratch_size));
  entry->prim.execute(exec.stream, args->map);
  exec.stream.wait();
  std::lock_guard<std::mutex> lock(entry->args->mutex);
  entry->args->free.push_back(std::move(args));
}

namespace {

template <typename T>
void RunGemmRef(KernelContext& ctx, const GemmPlan& p, const T* a, const T* b, const T* bias, T* c) {
  using A = cpu::WrapType<T>;  // T for floating types; integers wrap around
  const std::vector<int64_t> a_off = BatchOffsets(p.batch, p.a_batch, p.m * p.k);
  const std::vector<int64_t> b_off = BatchOffsets(p.batch, p.b_batch, p.k * p.n);
  const int64_t m = p.m, k = p.k, n = p.n;
  ctx.pool.ParallelFor(static_cast<int64_t>(a_off.size()) * m, GrainFor(k * n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const size_t bi = static_cast<size_t>(r / m);
      const T* ap = a + a_off[bi] + (r % m) * p.a_rs;
      const T* bp = b + b_off[bi];
      T* cp = c + r * n;
      if (p.b_cs == 1) {  // B's rows are contiguous: accumulate rows of B
        for (int64_t j = 0; j < n; ++j) cp[j] = bias ? bias[j] : T(0);
        for (int64_t q = 0; q < k; ++q) {
          const A av = static_cast<A>(ap[q * p.a_cs]);
          const T* brow = bp + q * p.b_rs;
          for (int64_t j = 0; j < n; ++j) cp[j] = static_cast<T>(static_cast<A>(cp[j]) + av * static_cast<A>(brow[j]));
        }
      } else {  // B's columns are contiguous: dot products
        for (int64_t j = 0; j < n; ++j) {
          const T* bcol = bp + j * p.b_cs;
          A s = bias ? static_cast<A>(bias[j]) : A(0);
          for (int64_t q = 0; q < k; ++q) s += static_cast<A>(ap[q * p.a_cs]) * static_cast<A>(bcol[q * p.b_rs]);
          cp[j] = static_cast<T>(s);
        }
      }
    }
  });
}

// Runs the plan in c's dtype (float32 by oneDNN unless the product is empty); bias (n) or null.
void RunGemm(KernelContext& ctx, const GemmPlan& p, const void* a, const void* b, const Tensor* bias_tensor,
             const Tensor& c) {
  const void* bias = bias_tensor != nullptr ? bias_tensor->raw_data() : nullptr;
  if (c.numel() == 0) return;
  if (c.dtype()->data_type() == DataType::kFloat32 && p.k > 0) return RunGemmF32(ctx, p, a, b, bias, c.raw_data());
  VisitDType(c.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      RunGemmRef(ctx, p, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(bias), c.data<T>());
    } else {
      OF_THROW(Internal) << "the matmul loops have no " << c.dtype() << " instance";
    }
  });
}

// ---- backward -------------------------------------------------------------------------------------

TensorPtr SumTo(const TensorPtr& g, const Shape& shape) { return g->shape() == shape ? g : ops::SumToShape(g, shape); }

// (..., n) -> (prod(...), n).
TensorPtr Rows(const TensorPtr& t) {
  if (t->ndim() == 2) return t;
  return ops::Reshape(t, {-1, t->shape()[t->ndim() - 1].value()});
}

std::vector<TensorPtr> MatmulBackward(const BackwardContext& ctx) {
  const TensorPtr& dc = ctx.grad_outputs[0];
  if (!dc) return {nullptr, nullptr};
  const TensorPtr& a = ctx.inputs[0];
  const TensorPtr& b = ctx.inputs[1];
  const bool ta = ctx.attrs.Bool("transpose_a"), tb = ctx.attrs.Bool("transpose_b");
  TensorPtr da, db;
  if (ctx.needs_input_grad[0]) {
    // C = A B: dA = dC B^T; a stored transposed gets (dC B^T)^T = B dC^T.
    da = SumTo(ta ? MatmulT(b, dc, tb, true) : MatmulT(dc, b, false, !tb), a->shape());
  }
  if (ctx.needs_input_grad[1]) {
    // dB = A^T dC; b stored transposed gets dC^T A. A 2-D b shared by a batch of row-major a's sums
    // over the batch: one product of the stacked rows.
    if (b->ndim() == 2 && a->ndim() > 2 && !ta) {
      db = tb ? MatmulT(Rows(dc), Rows(a), true, false) : MatmulT(Rows(a), Rows(dc), true, false);
    } else {
      db = SumTo(tb ? MatmulT(dc, a, true, ta) : MatmulT(a, dc, !ta, false), b->shape());
    }
  }
  return {da, db};
}

std::vector<TensorPtr> LinearBackward(const BackwardContext& ctx) {
  const TensorPtr& dy = ctx.grad_outputs[0];
  if (!dy) return {nullptr, nullptr, nullptr};
  const TensorPtr& x = ctx.inputs[0];
  const TensorPtr& w = ctx.inputs[1];
  TensorPtr dx, dw, dbias;
  if (ctx.needs_input_grad[0]) dx = ops::Matmul(dy, w);
  if (ctx.needs_input_grad[1]) {
    const TensorPtr dy2 = dy->ndim() == 1 ? ops::Unsqueeze(dy, 0) : Rows(dy);
    const TensorPtr x2 = x->ndim() == 1 ? ops::Unsqueeze(x, 0) : Rows(x);
    dw = MatmulT(dy2, x2, true, false);
  }
  if (ctx.needs_input_grad[2]) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d + 1 < dy->ndim(); ++d) dims.push_back(d);
    dbias = dims.empty() ? dy : ops::Sum(dy, dims);
  }
  return {dx, dw, dbias};
}

}  // namespace

namespace ops {

TensorPtr Matmul(const TensorPtr& a, const TensorPtr& b) {
  OF_CHECK(a && b) << "matmul: input '" << (a ? "b" : "a") << "' is null";
  if (a->ndim() >= 2 && b->ndim() >= 2) return MatmulT(a, b, false, false);
  OF_CHECK(a->ndim() >= 1 && b->ndim() >= 1) << "matmul: operands must have at least 1 dim, got a " << a->shape()
                                             << " and b " << b->shape();
  // NumPy: a 1-D a is a row (1, k), a 1-D b a column (k, 1); the added dims are removed again.
  try {
    const Shape& as = a->shape();
    const Shape& bs = b->shape();
    CheckInner(as[as.ndim() - 1], bs[bs.ndim() == 1 ? 0 : bs.ndim() - 2], as, bs, false, false);
  } catch (const Error& e) {
    throw Error(e.code(), "matmul: " + e.message());
  }
  TensorPtr c = MatmulT(a->ndim() == 1 ? Unsqueeze(a, 0) : a, b->ndim() == 1 ? Unsqueeze(b, 1) : b, false, false);
  if (a->ndim() == 1) c = Squeeze(c, {-2});
  if (b->ndim() == 1) c = Squeeze(c, {-1});
  return c;
}

TensorPtr Linear(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias) {
  static const OpDef& op = OpRegistry::Global().Get("linear");
  return Apply1(op, {x, weight, bias});
}

}  // namespace ops

void RegisterMatmulOps(OpRegistry& registry) {
  registry.Register(OpDef{
      .name = "matmul",
      .inputs = {"a", "b"},
      .outputs = {"c"},
      .attrs = {{"transpose_a", false}, {"transpose_b", false}},
      .infer = InferMatmul,
      .backward = MatmulBackward,
      .kernels = CpuKernels(kNumericTypes, Guarded<MatmulKernelOf<RunGemm>>),
      .strided_inputs = true,  // transposed views are read in place
      .autocast = AutocastPolicy::kLowPrecision,
  });
  registry.Register(OpDef{
      .name = "linear",
      .inputs = {"x", "weight", "bias"},
      .optional_inputs = {"bias"},
      .outputs = {"y"},
      .infer = InferLinear,
      .backward = LinearBackward,
      .kernels = CpuKernels(kNumericTypes, Guarded<LinearKernelOf<RunGemm>>),
      .autocast = AutocastPolicy::kLowPrecision,
  });
}

}  // namespace oneflow
