#include "core/ops/dnnl/dnnl_common.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/device/thread_pool.h"
#include "core/ops/dnnl/sgemm.h"
#include "core/tensor/copy.h"
#include "core/tensor/factory.h"

// oneDNN is built with OpenMP (libgomp, which libdnnl loads). Weak references reach its thread-count
// calls without linking OpenMP into oneflow_c and its consumers; they stay null if it is absent.
extern "C" {
__attribute__((weak)) void omp_set_num_threads(int);
__attribute__((weak)) int omp_get_max_threads(void);
}

namespace oneflow {

namespace dnnl_util {

const dnnl::engine& Engine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);  // never destroyed
  return *engine;
}

namespace {
// The least work worth a thread of its own: 2^16 simple operations (PrepareExec's `work`).
constexpr int64_t kWorkPerThread = int64_t{1} << 16;
}  // namespace

Exec PrepareExec(ThreadPool& pool, int64_t work) {
  thread_local dnnl::stream stream(Engine());
  const int threads = static_cast<int>(std::clamp<int64_t>(work / kWorkPerThread, 1, pool.num_threads()));
  if (omp_set_num_threads != nullptr && omp_get_max_threads != nullptr && omp_get_max_threads() != threads) {
    omp_set_num_threads(threads);
  }
  return {threads, stream};
}

// Note [Products on the pool's threads]
// oneDNN's sgemm parallelises itself on OpenMP threads (libgomp's), which are not the pool's where
// OMP_WAIT_POLICY=passive (Note [One set of threads with oneDNN] in core/device/thread_pool.cpp): there
// libgomp's worker sleeps as soon as a parallel region ends, and every region of sgemm, and every barrier
// in one, wakes it again (tens of microseconds each on these virtual machines), while the pool's worker,
// which the kernels before and after run on, waits beside it. PoolSgemm runs a product on the pool's
// threads instead, each share a single-threaded sgemm: shares of C's rows, or of its columns where those
// are more (a share reads the other operand whole, so the longer side of C is the one shared), or of the
// depth where it is more than kDepthSplit times either side of C (the weight gradient of a 1x1
// convolution over many positions: few sums, each a long one; each share sums into its own buffer, and
// those are added into C after, in share order; PoolDepthShares, which the engine's own weight-gradient
// kernel shares its positions by too). The convolution kernels run their products on it (1x1 backward
// data and weight gradients, and those over patches); the 1x1 forwards, and the backward data into 64
// channels over many positions, stay on oneDNN's convolution and matmul primitives, which ran ResNet-50's
// narrow outputs over many positions (64 and 128 channels at 56x56 and 28x28) up to 1.35x faster than
// shares of sgemm's rows (Note [1x1 convolutions as products] in conv.cpp). Measured on 2 threads
// of a Xeon with AVX-512 (oneDNN 2.6.3, OMP_WAIT_POLICY=passive, alternated with the build before, lazy
// training steps, medians of 3 runs): ResNet-50 at batch 1 144-150 -> 133-137 ms, at batch 4 438-462 ->
// 424-429 ms, at batch 16 within the noise (1587-1602 against 1580-1613; its 1x1 weight gradients 281 ->
// 270 ms); the main job's first 16,384 images with --graph 6.90-6.94 -> 6.11-6.30 s, eagerly 7.56-7.57 ->
// 7.45-7.55 s.
constexpr int64_t kDepthSplit = 3;

void SgemmAlone(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // libgomp sizes oneDNN's threads per calling thread; the next primitive on this thread sets its own
  // count again (PrepareExec).
  if (omp_set_num_threads != nullptr && omp_get_max_threads != nullptr && omp_get_max_threads() != 1) {
    omp_set_num_threads(1);
  }
  const dnnl_status_t status = dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  OF_CHECK_INTERNAL(status == dnnl_success) << "dnnl_sgemm failed with status " << static_cast<int>(status);
}

namespace {
// At least kWorkPerThread per share, counted as PrepareExec counts products: multiply-adds / 8.
int64_t SharesOf(ThreadPool& pool, int64_t m, int64_t n, int64_t k) {
  return std::clamp<int64_t>(m * n * k / 8 / kWorkPerThread, 1, pool.num_threads());
}
}  // namespace

void PoolDepthShares(ThreadPool& pool, int64_t m, int64_t n, int64_t k, float beta, float* c, int64_t ldc,
                     const DepthProduct& product) {
  const int64_t shares = SharesOf(pool, m, n, k);
  if (shares == 1) return product(0, k, beta, c, ldc);
  // Share 0 sums into C (with beta), share i > 0 into partials[i - 1] (m x n).
  const int64_t size = m * n;
  auto* partials = static_cast<float*>(Buffer(kSlotPartials, static_cast<size_t>((shares - 1) * size) * sizeof(float)));
  pool.ParallelFor(shares, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t k0 = k * i / shares, k1 = k * (i + 1) / shares;
      if (i == 0) {
        product(k0, k1, beta, c, ldc);
      } else {
        product(k0, k1, 0.0f, partials + (i - 1) * size, n);
      }
    }
  });
  pool.ParallelFor(m, std::max<int64_t>(1, 16384 / n), [&](int64_t begin, int64_t end) {
    for (int64_t i = 1; i < shares; ++i) {
      const float* part = partials + (i - 1) * size;
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t j = 0; j < n; ++j) c[r * ldc + j] += part[r * n + j];
      }
    }
  });
}

void PoolSgemm(ThreadPool& pool, char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int64_t shares = SharesOf(pool, m, n, k);
  if (shares == 1) return SgemmAlone(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  const bool a_t = ta == 'T', b_t = tb == 'T';
  if (k > kDepthSplit * std::max(m, n)) {
    return PoolDepthShares(pool, m, n, k, beta, c, ldc,
                           [&](int64_t k0, int64_t k1, float share_beta, float* out, int64_t ldo) {
                             SgemmAlone(ta, tb, m, n, k1 - k0, 1.0f, a_t ? a + k0 * lda : a + k0, lda,
                                        b_t ? b + k0 : b + k0 * ldb, ldb, share_beta, out, ldo);
                           });
  }
  // The shares are ParallelFor's chunks of C's rows or columns (one range, the whole side, where it runs
  // inline).
  const bool by_rows = m >= n;
  const int64_t side = by_rows ? m : n;
  pool.ParallelFor(side, (side + shares - 1) / shares, [&](int64_t s0, int64_t s1) {
    if (by_rows) {
      SgemmAlone(ta, tb, s1 - s0, n, k, 1.0f, a_t ? a + s0 : a + s0 * lda, lda, b, ldb, beta, c + s0 * ldc, ldc);
    } else {
      SgemmAlone(ta, tb, m, s1 - s0, k, 1.0f, a, lda, b_t ? b + s0 * ldb : b + s0, ldb, beta, c + s0, ldc);
    }
  });
}

size_t KeyHash::operator()(const Key& key) const noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

void* Buffer(BufferSlot slot, size_t bytes) {
  struct Slot {
    void* data = nullptr;
    size_t size = 0;
  };
  struct Buffers {
    Slot slots[kNumSlots];
    ~Buffers() {
      for (Slot& s : slots) std::free(s.data);
    }
  };
  thread_local Buffers buffers;
  Slot& s = buffers.slots[slot];
  if (s.size < bytes) {
    std::free(s.data);
    s.data = nullptr;
    s.size = 0;
    const size_t rounded = (bytes + 4095) / 4096 * 4096;
    s.data = std::aligned_alloc(64, rounded);
    OF_CHECK(s.data != nullptr) << "out of memory allocating a " << rounded << "-byte oneDNN buffer";
    s.size = rounded;
  }
  return s.data;
}

dnnl::primitive_attr DefaultAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory Scratchpad(const dnnl::primitive_desc_base& pd) {
  const memory::desc desc = pd.scratchpad_desc();
  return memory(desc, Engine(), desc.get_size() == 0 ? nullptr : Buffer(kSlotScratch, desc.get_size()));
}

namespace {

// Note [1x1 weights in blocks]
// oneDNN's 1x1 convolution primitives take the weight (o, c) in blocks of b output channels, (o / b, c,
// b) (Acdb48a, Acdb64a; o padded with zeros to a multiple of b), and it is reordered from ours on every
// call (in training the weight changes every step). oneDNN 2.6's reorder of these ran at 0.6-0.9 G
// floats per second (ResNet-50's 36 at batch 4 on 2 threads of an AVX-512 EPYC: ~13 ms of a 500 ms
// step, 512 x 2048 alone 1.6 ms). Each block is the transpose of b consecutive rows of ours, both
// contiguous, so the engine transposes them itself, block by block on the pool, in tiles of 16 columns
// with each row's next lines prefetched: 0.5 ms for 512 x 2048, 1.0 against 2.9 ms for 2048 x 1024 (cold
// caches).

// The output channels per block if `prim` holds the weight `user` (o, c, 1, ...) of a 1x1 convolution in
// blocks of output channels, contiguous and each (c, b); else 0.
int64_t OutputChannelBlock(const memory::desc& user, const memory::desc& prim) {
  const dnnl_memory_desc_t &u = user.data, &p = prim.data;
  if (p.data_type != dnnl_f32 || p.format_kind != dnnl_blocked || p.offset0 != 0 || p.ndims < 2) return 0;
  const memory::dims dims(u.dims, u.dims + u.ndims);
  if (dims.size() != static_cast<size_t>(p.ndims) || user != PlainDesc(dims)) return 0;
  for (int i = 2; i < p.ndims; ++i) {
    if (p.dims[i] != 1) return 0;
  }
  const dnnl_blocking_desc_t& b = p.format_desc.blocking;
  const int64_t block = b.inner_nblks == 1 && b.inner_idxs[0] == 0 ? b.inner_blks[0] : 0;
  return block > 0 && b.strides[1] == block && b.strides[0] == p.dims[1] * block ? block : 0;
}

// dst (ceil(o / b) blocks of (c, b)) = src (o, c) row-major, b rows at a time transposed; rows past o
// are zeros.
void TransposeIntoBlocks(const float* src, int64_t o, int64_t c, int64_t b, float* dst, ThreadPool& pool) {
  constexpr int64_t kColumns = 16, kAhead = 64;  // a tile's columns (a cache line of each row); prefetch
  const int64_t blocks = (o + b - 1) / b;
  pool.ParallelFor(blocks, GrainFor(b * c), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t rows = std::min(b, o - k * b);
      const float* in = src + k * b * c;
      float* out = dst + k * b * c;
      for (int64_t c0 = 0; c0 < c; c0 += kColumns) {
        const int64_t columns = std::min(kColumns, c - c0);
        for (int64_t r = 0; r < b; ++r) {
          float* column = out + c0 * b + r;
          if (r >= rows) {
            for (int64_t j = 0; j < columns; ++j) column[j * b] = 0.0f;
            continue;
          }
          const float* row = in + r * c + c0;
          __builtin_prefetch(row + kAhead);
          for (int64_t j = 0; j < columns; ++j) column[j * b] = row[j];
        }
      }
    }
  });
}

}  // namespace

Operand::Operand(const memory::desc& user, const memory::desc& prim, bool input)
    : user_(user), prim_(prim), input_(input) {
  if (user_ != prim_) {
    reorder_ = input ? dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), user_, Engine(), prim_))
                     : dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), prim_, Engine(), user_));
    if (input) block_ = OutputChannelBlock(user_, prim_);
  }
}

memory Operand::Prepare(void* data, BufferSlot slot, dnnl::stream& stream, ThreadPool* pool) const {
  memory user(user_, Engine(), data);
  if (!reorder_) return user;
  memory prim(prim_, Engine(), Buffer(slot, prim_.get_size()));
  if (!input_) return prim;
  if (block_ > 0 && pool != nullptr) {
    const dnnl_memory_desc_t& u = user_.data;
    TransposeIntoBlocks(static_cast<const float*>(data), u.dims[0], u.dims[1], block_,
                        static_cast<float*>(prim.get_data_handle()), *pool);
  } else {
    reorder_->execute(stream, user, prim);
  }
  return prim;
}

void Operand::Finish(memory prim, void* data, dnnl::stream& stream) const {
  if (!reorder_) return;
  memory user(user_, Engine(), data);
  reorder_->execute(stream, prim, user);
}

memory::desc PlainDesc(const memory::dims& dims) {
  memory::dims strides(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(dims[i], 1);
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc AnyDesc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

memory::desc DataDesc(const memory::dims& dims, bool channels_last) {
  return channels_last ? memory::desc(dims, memory::data_type::f32, memory::format_tag::nhwc) : PlainDesc(dims);
}

bool ChannelsLastCall(const Tensor& a, const Tensor& b) {
  auto dense = [](const Tensor& t) {
    return t.ndim() == 4 && IsDenseIn(t.shape(), t.strides(), MemoryFormat::kChannelsLast);
  };
  return dense(a) && dense(b) &&
         (a.memory_format() == MemoryFormat::kChannelsLast || b.memory_format() == MemoryFormat::kChannelsLast);
}

void RunContiguous(KernelContext& ctx, KernelFn fn) {
  auto contiguous = [](const TensorPtr& t) { return !t || t->is_contiguous(); };
  if (std::all_of(ctx.inputs.begin(), ctx.inputs.end(), contiguous) &&
      std::all_of(ctx.outputs.begin(), ctx.outputs.end(), contiguous)) {
    return fn(ctx);
  }
  std::vector<TensorPtr> inputs(ctx.inputs.begin(), ctx.inputs.end()), outputs(ctx.outputs.begin(), ctx.outputs.end());
  for (TensorPtr& t : inputs) {
    if (t) t = MakeContiguous(t, &ctx.pool);
  }
  for (TensorPtr& t : outputs) {
    if (!contiguous(t)) t = Empty(t->dtype(), t->shape(), t->device());
  }
  KernelContext inner{inputs, outputs, ctx.attrs, ctx.pool, ctx.generator};
  fn(inner);
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (outputs[j] != ctx.outputs[j]) CopyStrided(*outputs[j], *ctx.outputs[j], &ctx.pool);
  }
}

namespace {
// What a call passed: "inputs (1, 4, 5, 5) float32, (2, 4, 3, 3) float32, none with stride=[1, 1], ...".
std::string CallText(const KernelContext& ctx) {
  std::string text = "inputs ";
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (i > 0) text += ", ";
    text += ctx.inputs[i] ? fmt::format("{} {}", ctx.in(i).shape(), ctx.in(i).dtype()->name()) : "none";
  }
  return text + " with " + ctx.attrs.ToString();
}
}  // namespace

void ThrowRefused(const Refused& e, const KernelContext& ctx) {
  const StatusCode code = e.status == dnnl_unimplemented     ? StatusCode::kUnimplemented
                          : e.status == dnnl_out_of_memory ? StatusCode::kResourceExhausted
                                                            : StatusCode::kInvalidArgument;
  throw Error(code, fmt::format("oneDNN cannot run this call ({}): {}", CallText(ctx), e.what()));
}

void ThrowDnnlError(const dnnl::error& e, const KernelContext& ctx) {
  OF_THROW(Internal) << "oneDNN failed (" << CallText(ctx) << "): " << e.what() << " (status "
                     << static_cast<int>(e.status) << ")";
}

bool FitsDnnl(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(),
                     [](int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); });
}

void CheckNumeric(const TensorMeta& t, std::string_view name) {
  OF_CHECK(t.dtype != DType::Bool()) << name << " is bool; this op computes with numbers";
}

void CheckFloating(const TensorMeta& t, std::string_view name) {
  OF_CHECK(t.dtype->is_floating_point()) << name << " must be floating (the results are fractions), got " << t.dtype;
}

double CheckedEps(const Attrs& attrs) {
  const double eps = attrs.Float("eps");
  OF_CHECK(eps > 0 && std::isfinite(eps)) << "eps must be finite and > 0, got " << eps;
  return eps;
}

std::vector<int64_t> Pair(const Attrs& attrs, std::string_view name, int64_t min) {
  const std::vector<int64_t>& v = attrs.Ints(name);
  OF_CHECK(v.size() == 2 && v[0] >= min && v[1] >= min)
      << name << " must be two values >= " << min << ", got " << AttrValueToString(v);
  return v;
}

std::vector<int64_t> PaddingEnd(const Attrs& attrs, const std::vector<int64_t>& padding) {
  const AttrValue* v = attrs.Find("padding_end");
  if (v == nullptr || attrs.Ints("padding_end").empty()) return padding;
  return Pair(attrs, "padding_end", 0);
}

int64_t DilatedKernel(int64_t k, const Window2d& win, int axis) {
  const int64_t d = win.dilation[axis];
  int64_t extent;
  if (__builtin_mul_overflow(d, k - 1, &extent) || __builtin_add_overflow(extent, 1, &extent)) {
    const char* name = axis == 0 ? "kH" : "kW";
    OF_THROW(InvalidArgument) << "dilation[" << axis << "] is " << d << ": the dilated kernel (dilation * (" << name
                              << " - 1) + 1) overflows int64 for " << name << " = " << k;
  }
  return extent;
}

int64_t PaddedInput(int64_t in, const Window2d& win, int axis) {
  const int64_t p = win.padding[axis], pe = win.padding_end[axis];
  int64_t padded;
  if (__builtin_add_overflow(p, pe, &padded) || __builtin_add_overflow(padded, in, &padded)) {
    const char* dim = axis == 0 ? "H" : "W";
    if (p == pe) {
      OF_THROW(InvalidArgument) << "padding[" << axis << "] is " << p << ": the padded input (" << dim
                                << " + 2 * padding) overflows int64";
    }
    OF_THROW(InvalidArgument) << "padding[" << axis << "] is " << p << " and padding_end[" << axis << "] is " << pe
                              << ": the padded input (" << dim << " + padding + padding_end) overflows int64";
  }
  return padded;
}

int64_t WindowOut(int64_t in, int64_t k, const Window2d& win, int axis) {
  const int64_t s = win.stride[axis], p = win.padding[axis];
  const int64_t span = PaddedInput(in, win, axis) - DilatedKernel(k, win, axis);  // both >= 0: no overflow
  if (span < 0) return 0;
  int64_t out = span / s + 1;
  if (win.ceil_mode) {
    if (span % s != 0) ++out;
    // (out - 1) * s overflows only where it is past in + p (which fits: in + p + p_end does).
    int64_t last_start;
    if (__builtin_mul_overflow(out - 1, s, &last_start) || last_start >= in + p) --out;
  }
  return out;
}

std::pair<Dim, Dim> WindowOutput(const Shape& x, Dim kh, Dim kw, const Window2d& win) {
  Dim out[2];
  const Dim kernel[2] = {kh, kw};
  bool ok = true;
  for (int a = 0; a < 2; ++a) {
    PaddedInput(0, win, a);  // what can be checked before sizes are known
    if (kernel[a].is_known()) DilatedKernel(kernel[a].value(), win, a);
    if (!x[2 + a].is_known() || !kernel[a].is_known()) continue;
    out[a] = WindowOut(x[2 + a].value(), kernel[a].value(), win, a);
    ok &= out[a].value() >= 1;
  }
  if (!ok) {
    OF_THROW(InvalidArgument) << "output size would be (" << out[0] << ", " << out[1] << "): x " << x
                              << " is too small for kernel (" << kh << ", " << kw << ") with stride ("
                              << win.stride[0] << ", " << win.stride[1] << "), padding (" << win.padding[0] << ", "
                              << win.padding[1] << ")"
                              << (win.symmetric() ? std::string()
                                                  : fmt::format(", padding_end ({}, {})", win.padding_end[0],
                                                                win.padding_end[1]))
                              << ", dilation (" << win.dilation[0] << ", " << win.dilation[1] << ")"
                              << (win.ceil_mode ? ", ceil_mode" : "");
  }
  return {out[0], out[1]};
}

std::pair<int64_t, int64_t> ValidRange(int64_t out, int64_t in, int64_t stride, int64_t pad, int64_t offset) {
  // o*stride + (offset - pad) in [0, in)  <=>  o in [ceil((pad - offset) / stride), ceil((in + pad - offset) / stride)).
  const int64_t first = std::max<int64_t>(0, CeilDiv(pad - offset, stride));
  const int64_t last = std::min<int64_t>(out, CeilDiv(in + pad - offset, stride));
  return {first, std::max(first, last)};
}

TensorPtr ContiguousInput(KernelContext& ctx, size_t i) { return MakeContiguous(ctx.inputs[i], &ctx.pool); }

}  // namespace dnnl_util
}  // namespace oneflow
