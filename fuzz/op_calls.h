// The op section of the C ABI as fuzzer choices, shared by fuzz_ops (eager) and fuzz_graph (the same
// calls on lazy tensors while a graph is being built). PrepareOp reads bytes and returns one call to
// make, with the tensors it reads, so that the harness can take their fingerprints before the call and
// compare them after it.
#pragma once

#include <functional>
#include <utility>

#include "fuzz_common.h"

namespace fz {

// The tensors one input works on: owned references, at most kCap of them (adding past that retires
// one chosen by the bytes; retired tensors are released by flush(), between steps, so that a step's
// operands stay valid while it adds tensors).
class Pool {
 public:
  static constexpr size_t kCap = 16;
  explicit Pool(Bytes& in) : in_(in) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() { clear(); }

  void clear() {
    flush();
    for (of_tensor_t* t : items_) of_tensor_release(t);
    items_.clear();
  }
  void flush() {
    for (of_tensor_t* t : retired_) of_tensor_release(t);
    retired_.clear();
  }
  // Takes over the reference t. Returns t (still valid: the pool holds it).
  of_tensor_t* add(of_tensor_t* t) {
    if (items_.size() == kCap) {
      const size_t k = in_.pick(kCap);
      retired_.push_back(items_[k]);
      items_[k] = t;
    } else {
      items_.push_back(t);
    }
    return t;
  }
  // A tensor of the pool; NULL when it is empty and, about once in 64 picks, on purpose (misuse).
  of_tensor_t* pick() {
    if (items_.empty() || in_.rare(64)) return nullptr;
    return items_[in_.pick(static_cast<uint32_t>(items_.size()))];
  }
  size_t size() const { return items_.size(); }
  of_tensor_t* at(size_t i) const { return items_[i]; }

 private:
  Bytes& in_;
  std::vector<of_tensor_t*> items_;
  std::vector<of_tensor_t*> retired_;
};

// A concrete size for a dim of a shape that may be unknown (a lazy tensor's): its own, else 2.
inline int64_t Concrete(int64_t d) { return d >= 0 ? d : 2; }

// One call to make. `call` receives the out parameter (preset to TensorSentinel()) and returns the
// status; `inputs` are the tensors it reads; `writes` says a successful call may modify them in place
// (initialisers, batch_norm's running statistics, optimizer steps, set_grad); `draws` that it may draw
// from the session's generator.
struct Prepared {
  const char* name = "";
  std::vector<const of_tensor_t*> inputs;
  bool writes = false;
  bool draws = false;
  bool makes_tensor = true;  // false: the call has no out_tensor (it is passed one all the same)
  bool must_fail = false;    // misuse that must be refused
  std::function<of_status_t*(of_tensor_t**)> call;
};

// What the op choices need: the session, the bytes, the pool, and whether lazy tensors are about.
struct OpContext {
  of_session_t* session;
  Bytes& in;
  Pool& pool;
};

// A new eager tensor for structured operands (shapes that fit the op), added to the pool: random
// floating values, or small integers for the other dtypes. NULL when it would be too large.
inline of_tensor_t* Fresh(OpContext& c, const of_dtype_t* dtype, std::vector<int64_t> dims) {
  if (dtype == nullptr) dtype = of_dtype_float32();
  for (int64_t& d : dims) d = Concrete(d);
  if (Numel(dims) < 0 || Numel(dims) > kMaxNumel) return nullptr;
  of_tensor_t* t = nullptr;
  if (of_dtype_is_floating_point(dtype)) {
    FZ_MUST(of_tensor_randn(c.session, dtype, dims.data(), dims.size(), nullptr, &t));
  } else {
    const int64_t n = Numel(dims);
    std::vector<unsigned char> bytes(static_cast<size_t>(n) * of_dtype_size(dtype));
    for (size_t i = 0; i < bytes.size(); i += of_dtype_size(dtype)) {
      bytes[i] = static_cast<unsigned char>(dtype == of_dtype_bool() ? c.in.u8() & 1 : c.in.u8() % 5);
    }
    FZ_MUST(of_tensor_from_data(c.session, dtype, dims.data(), dims.size(), bytes.data(), bytes.size(), nullptr,
                                &t));
  }
  return c.pool.add(t);
}

// A shape that broadcasts with `dims`: some leading dims dropped, each other dim kept or 1.
inline std::vector<int64_t> BroadcastPartner(Bytes& in, const std::vector<int64_t>& dims) {
  const size_t drop = in.pick(static_cast<uint32_t>(dims.size() + 1));
  std::vector<int64_t> out(dims.begin() + static_cast<std::ptrdiff_t>(drop), dims.end());
  for (int64_t& d : out) {
    if (in.rare(3)) d = 1;
  }
  if (in.rare(8)) out.insert(out.begin(), 1 + in.pick(2));
  return out;
}

// An array of dims arguments (reductions, squeeze, permute).
inline std::vector<int64_t> PickDimList(Bytes& in, size_t ndim) {
  std::vector<int64_t> dims(in.pick(static_cast<uint32_t>(ndim + 2)));
  for (int64_t& d : dims) d = in.dim(ndim);
  return dims;
}
// A target shape (reshape, view, expand): mostly the element count rearranged, sometimes anything.
inline std::vector<int64_t> PickTargetShape(Bytes& in, const std::vector<int64_t>& from) {
  std::vector<int64_t> dims;
  if (in.flag()) {
    int64_t n = 1;
    for (int64_t d : from) {
      if (__builtin_mul_overflow(n, Concrete(d), &n)) n = 1;
    }
    // factor n into a few sizes, with -1 for one of them sometimes
    const size_t parts = 1 + in.pick(4);
    for (size_t i = 0; i + 1 < parts && n > 1; ++i) {
      int64_t f = 1 + in.pick(4);
      while (f > 1 && n % f != 0) --f;
      dims.push_back(f);
      n /= f;
    }
    dims.push_back(n);
    if (in.rare(3)) dims[in.pick(static_cast<uint32_t>(dims.size()))] = -1;
    return dims;
  }
  dims.resize(in.pick(kMaxNdim + 2));
  for (int64_t& d : dims) d = in.size();
  return dims;
}

// ---- input shaping ---------------------------------------------------------------------------------
// Findings fixed in the engine keep their reproducers in corpus/<harness>/crash-*; the harness no longer
// steers around them (conv2d zero-size kernels, bool bytes other than 0 and 1, integer overflow, 0-size
// shapes and byte sizes that overflow, window arithmetic near INT64_MAX). Data from the input's bytes
// stays raw: bool data is mostly refused (bytes other than 0 and 1), and bool tensors come from
// comparisons, constant creations and of_tensor_empty instead.

using BinaryFn = of_status_t* (*)(of_session_t*, const of_tensor_t*, const of_tensor_t*, of_tensor_t**);
using ScalarFn = of_status_t* (*)(of_session_t*, const of_tensor_t*, double, of_tensor_t**);
using UnaryFn = of_status_t* (*)(of_session_t*, const of_tensor_t*, of_tensor_t**);
using DimFn = of_status_t* (*)(of_session_t*, const of_tensor_t*, int64_t, of_tensor_t**);
using ReduceFn = of_status_t* (*)(of_session_t*, const of_tensor_t*, const int64_t*, size_t, int32_t,
                                  of_tensor_t**);

struct NamedBinary { const char* name; BinaryFn fn; };
struct NamedScalar { const char* name; ScalarFn fn; };
struct NamedUnary { const char* name; UnaryFn fn; };

inline const NamedBinary kBinary[] = {
    {"of_add", of_add},         {"of_sub", of_sub},         {"of_mul", of_mul},
    {"of_div", of_div},         {"of_pow", of_pow},         {"of_maximum", of_maximum},
    {"of_minimum", of_minimum}, {"of_gt", of_gt},           {"of_ge", of_ge},
    {"of_lt", of_lt},           {"of_le", of_le},           {"of_eq", of_eq},
    {"of_ne", of_ne},           {"of_logical_and", of_logical_and}, {"of_logical_or", of_logical_or},
    {"of_matmul", of_matmul},
    {"of_atan2", of_atan2},     {"of_fmod", of_fmod},       {"of_remainder", of_remainder},
    {"of_bitwise_and", of_bitwise_and}, {"of_bitwise_or", of_bitwise_or}, {"of_bitwise_xor", of_bitwise_xor},
    {"of_bitwise_left_shift", of_bitwise_left_shift}, {"of_bitwise_right_shift", of_bitwise_right_shift},
};
inline const NamedScalar kScalar[] = {
    {"of_add_scalar", of_add_scalar}, {"of_sub_scalar", of_sub_scalar},
    {"of_mul_scalar", of_mul_scalar}, {"of_div_scalar", of_div_scalar},
    {"of_pow_scalar", of_pow_scalar}, {"of_maximum_scalar", of_maximum_scalar},
    {"of_minimum_scalar", of_minimum_scalar}, {"of_gt_scalar", of_gt_scalar},
    {"of_ge_scalar", of_ge_scalar},   {"of_lt_scalar", of_lt_scalar},
    {"of_le_scalar", of_le_scalar},   {"of_eq_scalar", of_eq_scalar},
    {"of_ne_scalar", of_ne_scalar},   {"of_full_like", of_full_like},
};
inline const NamedUnary kUnary[] = {
    {"of_neg", of_neg},         {"of_abs", of_abs},           {"of_exp", of_exp},
    {"of_log", of_log},         {"of_sqrt", of_sqrt},         {"of_rsqrt", of_rsqrt},
    {"of_relu", of_relu},       {"of_sigmoid", of_sigmoid},   {"of_tanh", of_tanh},
    {"of_logical_not", of_logical_not}, {"of_contiguous", of_contiguous},
    {"of_zeros_like", of_zeros_like},   {"of_ones_like", of_ones_like},
    {"of_sin", of_sin},         {"of_cos", of_cos},           {"of_tan", of_tan},
    {"of_asin", of_asin},       {"of_acos", of_acos},         {"of_atan", of_atan},
    {"of_sinh", of_sinh},       {"of_cosh", of_cosh},         {"of_asinh", of_asinh},
    {"of_acosh", of_acosh},     {"of_atanh", of_atanh},       {"of_erf", of_erf},
    {"of_erfinv", of_erfinv},   {"of_log1p", of_log1p},       {"of_expm1", of_expm1},
    {"of_reciprocal", of_reciprocal}, {"of_silu", of_silu},   {"of_mish", of_mish},
    {"of_selu", of_selu},       {"of_hardswish", of_hardswish}, {"of_hardsigmoid", of_hardsigmoid},
    {"of_floor", of_floor},     {"of_ceil", of_ceil},         {"of_round", of_round},
    {"of_trunc", of_trunc},     {"of_sign", of_sign},         {"of_isnan", of_isnan},
    {"of_isinf", of_isinf},     {"of_isfinite", of_isfinite}, {"of_bitwise_not", of_bitwise_not},
};

template <typename T, size_t N>
constexpr uint32_t Count(const T (&)[N]) {
  return N;
}

inline void PickConvOptions(Bytes& in, of_conv2d_options_t* o) {
  of_conv2d_options_init(o);
  if (in.flag()) return;
  for (int i = 0; i < 2; ++i) {
    o->stride[i] = (in.rare() ? in.size() : 1 + in.pick(3));
    o->padding[i] = (in.rare() ? in.size() : in.pick(3));
    o->dilation[i] = (in.rare() ? in.size() : 1 + in.pick(2));
    o->padding_end[i] = in.flag() ? -1 : (in.rare() ? in.size() : in.pick(3));
  }
  o->groups = in.rare() ? in.size() : 1 + in.pick(2);
  o->struct_size = in.struct_size(sizeof *o);
}
inline void PickPoolOptions(Bytes& in, of_pool2d_options_t* o) {
  of_pool2d_options_init(o);
  for (int i = 0; i < 2; ++i) {
    o->kernel_size[i] = (in.rare() ? in.size() : 1 + in.pick(3));
    o->stride[i] = (in.rare() ? in.size() : in.pick(3));
    o->padding[i] = (in.rare() ? in.size() : in.pick(2));
    o->dilation[i] = (in.rare() ? in.size() : 1 + in.pick(2));
    o->padding_end[i] = in.flag() ? -1 : (in.rare() ? in.size() : in.pick(2));
  }
  o->ceil_mode = in.flag_arg();
  o->count_include_pad = in.flag_arg();
  o->struct_size = in.struct_size(sizeof *o);
}
inline void PickLossOptions(Bytes& in, of_loss_options_t* o) {
  of_loss_options_init(o);
  if (in.flag()) return;
  const uint8_t r = in.u8();
  o->reduction = r < 250 ? r % 3 : static_cast<of_reduction_t>(r);
  o->ignore_index = in.rare(4) ? in.size() : (in.flag() ? -100 : in.pick(3));
  o->label_smoothing = in.flag() ? 0.0 : (in.rare() ? in.scalar() : in.pick(5) / 4.0);
  o->struct_size = in.struct_size(sizeof *o);
}
inline void PickBatchNormOptions(Bytes& in, of_batch_norm_options_t* o) {
  of_batch_norm_options_init(o);
  if (in.flag()) return;
  o->training = in.flag_arg();
  o->momentum = in.rare() ? in.scalar() : in.pick(5) / 4.0;
  o->eps = in.rare() ? in.scalar() : 1e-5;
  o->struct_size = in.struct_size(sizeof *o);
}

// int64 indices of `dims` in [0, bound), one in about eight made out of range (negative or >= bound).
inline of_tensor_t* SmallIndices(OpContext& c, std::vector<int64_t> dims, int64_t bound) {
  for (int64_t& d : dims) d = Concrete(d);
  if (Numel(dims) < 0 || Numel(dims) > kMaxNumel) return nullptr;
  std::vector<int64_t> values(static_cast<size_t>(Numel(dims)));
  for (int64_t& v : values) {
    const int64_t past = c.in.pick(3);
    // A bound near INT64_MAX (a huge symbolic dim) has no room above it: saturate rather than overflow.
    const int64_t above =
        bound > std::numeric_limits<int64_t>::max() - past ? std::numeric_limits<int64_t>::max() : bound + past;
    v = c.in.rare(8) ? (c.in.flag() ? -1 - past : above)
                     : c.in.pick(static_cast<uint32_t>(std::max<int64_t>(bound, 1)));
  }
  of_tensor_t* t = nullptr;
  FZ_MUST(of_tensor_from_data(c.session, of_dtype_int64(), dims.data(), dims.size(), values.data(),
                              values.size() * sizeof(int64_t), nullptr, &t));
  return c.pool.add(t);
}

// Reads the next op call from the bytes. The operands come from the pool, or (often) are made fresh
// with shapes that fit the op, so that the kernels are reached and not only the shape checks.
inline Prepared PrepareOp(OpContext& c) {
  Bytes& in = c.in;
  of_session_t* s = in.rare(128) ? nullptr : c.session;  // misuse: no session
  Prepared p;
  const uint32_t kind = in.pick(60);
  const of_tensor_t* x = c.pool.pick();
  const std::vector<int64_t> xd = DimsOf(x);
  switch (kind) {
    case 0: case 1: case 2: case 3: case 4: {  // binary, b often made to broadcast with a
      const NamedBinary& op = kBinary[in.pick(Count(kBinary))];
      const of_tensor_t* b = c.pool.pick();
      if (x != nullptr && in.pick(3) != 0) {
        std::vector<int64_t> bd = BroadcastPartner(in, xd);
        if (op.fn == of_matmul && !xd.empty()) {  // (..., k) @ (k, n)
          bd = {xd.back(), static_cast<int64_t>(in.pick(4))};
          if (in.rare(4)) bd.erase(bd.begin() + 1);
        }
        b = Fresh(c, in.rare(4) ? PickDType(in) : DTypeOfTensor(x), bd);
      }
      if (in.flag()) std::swap(x, b);
      p.name = op.name;
      p.inputs = {x, b};
      p.call = [=](of_tensor_t** out) { return op.fn(s, x, b, out); };
      break;
    }
    case 5: case 6: {
      const NamedScalar& op = kScalar[in.pick(Count(kScalar))];
      const double v = in.scalar();
      p.name = op.name;
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return op.fn(s, x, v, out); };
      break;
    }
    case 7: case 8: case 9: {
      const NamedUnary& op = kUnary[in.pick(Count(kUnary))];
      p.name = op.name;
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return op.fn(s, x, out); };
      break;
    }
    case 10: {
      const int32_t approx = in.flag_arg();
      p.name = "of_gelu";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_gelu(s, x, approx, out); };
      break;
    }
    case 11: {
      const of_dtype_t* dtype = PickDType(in);
      p.name = "of_cast";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_cast(s, x, dtype, out); };
      break;
    }
    case 12: case 13: {
      static const ReduceFn kFns[] = {of_sum, of_mean, of_max, of_min, of_prod, of_logsumexp, of_all, of_any};
      static const char* const kNames[] = {"of_sum", "of_mean", "of_max", "of_min",
                                           "of_prod", "of_logsumexp", "of_all", "of_any"};
      const uint32_t k = in.pick(8);
      const std::vector<int64_t> dims = PickDimList(in, xd.size());
      const int32_t keepdim = in.flag_arg();
      const bool null_dims = dims.empty() && in.flag();
      p.name = kNames[k];
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) {
        return kFns[k](s, x, null_dims ? nullptr : dims.data(), dims.size(), keepdim, out);
      };
      break;
    }
    case 14: {
      const int64_t dim = in.dim(xd.size());
      const int32_t keepdim = in.flag_arg();
      p.name = "of_argmax";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_argmax(s, x, dim, keepdim, out); };
      break;
    }
    case 15: {
      const bool is_std = in.flag();
      const std::vector<int64_t> dims = PickDimList(in, xd.size());
      const int64_t correction = in.rare() ? in.size() : in.pick(3);
      const int32_t keepdim = in.flag_arg();
      p.name = is_std ? "of_std" : "of_var";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) {
        return (is_std ? of_std : of_var)(s, x, dims.data(), dims.size(), correction, keepdim, out);
      };
      break;
    }
    case 16: {  // linear: weight (out, in) fitting x's last dim, bias (out) or NULL
      const of_tensor_t* w = c.pool.pick();
      const of_tensor_t* b = in.flag() ? nullptr : c.pool.pick();
      if (x != nullptr && !xd.empty() && in.pick(4) != 0) {
        const int64_t o = in.pick(5);
        const of_dtype_t* dt = DTypeOfTensor(x);
        w = Fresh(c, dt, {o, in.rare(8) ? 3 : xd.back()});
        if (b != nullptr || in.flag()) b = Fresh(c, dt, {in.rare(8) ? o + 1 : o});
      }
      p.name = "of_linear";
      p.inputs = {x, w, b};
      p.call = [=](of_tensor_t** out) { return of_linear(s, x, w, b, out); };
      break;
    }
    case 17: case 18: {  // conv2d with fresh consistent operands most of the time
      of_conv2d_options_t o;
      PickConvOptions(in, &o);
      const of_tensor_t* w = c.pool.pick();
      const of_tensor_t* b = in.flag() ? nullptr : c.pool.pick();
      if (in.pick(4) != 0) {
        const of_dtype_t* dt = in.rare(8) ? PickFloatDType(in) : of_dtype_float32();
        const int64_t g = o.groups >= 1 && o.groups <= 3 ? o.groups : 1;
        const int64_t n = in.pick(3), ci = g * (1 + in.pick(2)), oc = g * (1 + in.pick(2));
        const int64_t kh = 1 + in.pick(3), kw = 1 + in.pick(3);
        if (x == nullptr || xd.size() != 4 || in.flag()) x = Fresh(c, dt, {n, ci, in.pick(7), in.pick(7)});
        const int64_t xc = DimsOf(x).size() == 4 ? Concrete(DimsOf(x)[1]) : ci;
        w = Fresh(c, in.rare(8) ? of_dtype_float64() : DTypeOfTensor(x), {oc, std::max<int64_t>(xc / g, 1), kh, kw});
        b = in.flag() ? nullptr : Fresh(c, DTypeOfTensor(x), {in.rare(8) ? oc + 1 : oc});
      }
      p.name = "of_conv2d";
      p.inputs = {x, w, b};
      const bool null_options = in.rare(8);
      p.call = [=](of_tensor_t** out) { return of_conv2d(s, x, w, b, null_options ? nullptr : &o, out); };
      break;
    }
    case 19: {  // batch_norm over channel dim 1
      of_batch_norm_options_t o;
      PickBatchNormOptions(in, &o);
      const of_dtype_t* dt = x != nullptr && of_dtype_is_floating_point(DTypeOfTensor(x)) ? DTypeOfTensor(x)
                                                                                          : of_dtype_float32();
      if (x == nullptr || xd.size() < 2 || in.rare(4)) {
        x = Fresh(c, dt, {1 + in.pick(3), 1 + in.pick(3), in.pick(4), in.pick(4)});
      }
      const int64_t ch = DimsOf(x).size() >= 2 ? Concrete(DimsOf(x)[1]) : 1;
      auto stat = [&]() -> of_tensor_t* {
        if (in.rare(4)) return nullptr;
        if (in.rare(8)) return c.pool.pick();
        const int64_t wrong = ch < std::numeric_limits<int64_t>::max() ? ch + 1 : ch - 1;  // x may be lazy: any ch
        return Fresh(c, in.rare(8) ? of_dtype_float64() : dt, {in.rare(16) ? wrong : ch});
      };
      const of_tensor_t* w = stat();
      const of_tensor_t* b = stat();
      of_tensor_t* rm = stat();
      of_tensor_t* rv = stat();
      if (rv != nullptr) FZ_CHECK(of_init_uniform(c.session, rv, 0.5, 1.5));  // a variance is positive
      p.name = "of_batch_norm";
      p.inputs = {x, w, b, rm, rv};
      p.writes = true;  // training (the default whenever the struct is short or NULL) updates rm and rv
      const bool null_options = in.rare(8);
      p.call = [=](of_tensor_t** out) {
        return of_batch_norm(s, x, w, b, rm, rv, null_options ? nullptr : &o, out);
      };
      break;
    }
    case 20: case 21: {  // max / avg / adaptive pooling of a 4-d tensor
      if (x == nullptr || xd.size() != 4 || in.flag()) {
        x = Fresh(c, in.rare(8) ? PickFloatDType(in) : of_dtype_float32(),
                  {in.pick(3), 1 + in.pick(2), in.pick(9), in.pick(9)});
      }
      const uint32_t which = in.pick(3);
      if (which == 2) {
        const int64_t oh = in.rare() ? in.size() : 1 + in.pick(4), ow = in.rare() ? in.size() : 1 + in.pick(4);
        p.name = "of_adaptive_avg_pool2d";
        p.inputs = {x};
        p.call = [=](of_tensor_t** out) { return of_adaptive_avg_pool2d(s, x, oh, ow, out); };
        break;
      }
      of_pool2d_options_t o;
      PickPoolOptions(in, &o);
      const bool null_options = in.rare(32);
      p.name = which == 0 ? "of_max_pool2d" : "of_avg_pool2d";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) {
        return (which == 0 ? of_max_pool2d : of_avg_pool2d)(s, x, null_options ? nullptr : &o, out);
      };
      break;
    }
    case 22: {
      const std::vector<int64_t> dims = PickTargetShape(in, xd);
      const bool view = in.flag();
      p.name = view ? "of_view" : "of_reshape";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return (view ? of_view : of_reshape)(s, x, dims.data(), dims.size(), out); };
      break;
    }
    case 23: {
      const int64_t a = in.dim(xd.size()), b = in.dim(xd.size());
      p.name = "of_flatten";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_flatten(s, x, a, b, out); };
      break;
    }
    case 24: {
      const std::vector<int64_t> dims = PickDimList(in, xd.size());
      p.name = "of_squeeze";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_squeeze(s, x, dims.data(), dims.size(), out); };
      break;
    }
    case 25: {
      const int64_t a = in.dim(xd.size()), b = in.dim(xd.size());
      p.name = "of_transpose";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_transpose(s, x, a, b, out); };
      break;
    }
    case 26: {  // permute: a shuffle of 0..ndim-1, sometimes broken
      std::vector<int64_t> dims(xd.size());
      for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
      for (size_t i = dims.size(); i > 1; --i) std::swap(dims[i - 1], dims[in.pick(static_cast<uint32_t>(i))]);
      if (in.rare(4)) dims = PickDimList(in, xd.size());
      if (!dims.empty() && dims[0] >= 0 && in.rare(4)) dims[0] -= static_cast<int64_t>(xd.size());  // negative spelling
      p.name = "of_permute";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_permute(s, x, dims.data(), dims.size(), out); };
      break;
    }
    case 27: {
      const int64_t dim = in.dim(xd.size());
      const int64_t start = in.rare() ? in.size() : static_cast<int64_t>(in.pick(5)) - 2;
      const int64_t length = in.rare() ? in.size() : in.pick(4);
      p.name = "of_narrow";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_narrow(s, x, dim, start, length, out); };
      break;
    }
    case 28: case 29: {  // cat / stack of 1..4 tensors, often x repeated or partners of its shape
      const size_t n = in.rare(32) ? 0 : 1 + in.pick(4);
      std::vector<const of_tensor_t*> list(n);
      for (const of_tensor_t*& t : list) {
        const uint32_t k = in.pick(4);
        t = k == 0 ? c.pool.pick() : k == 1 && x != nullptr ? Fresh(c, DTypeOfTensor(x), xd) : x;
      }
      const int64_t dim = in.dim(xd.size() + (kind == 29 ? 1 : 0));
      const bool stack = kind == 29;
      p.name = stack ? "of_stack" : "of_cat";
      p.inputs = list;
      const bool null_list = n == 0 && in.flag();
      p.call = [=](of_tensor_t** out) {
        return (stack ? of_stack : of_cat)(s, null_list ? nullptr : list.data(), list.size(), dim, out);
      };
      break;
    }
    case 30: {  // expand: x's dims with size-1 ones grown, -1 kept, leading dims added
      std::vector<int64_t> dims = xd;
      for (int64_t& d : dims) {
        const uint32_t k = in.pick(4);
        d = k == 0 ? -1 : k == 1 && d == 1 ? in.pick(4) : k == 2 ? in.size() : d;
      }
      if (in.rare(3)) dims.insert(dims.begin(), in.pick(4));
      if (in.rare(8)) dims = PickTargetShape(in, xd);
      p.name = "of_expand";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_expand(s, x, dims.data(), dims.size(), out); };
      break;
    }
    case 31: case 32: {  // softmax, log_softmax, unsqueeze, cumsum, cumprod
      static const DimFn kFns[] = {of_softmax, of_log_softmax, of_unsqueeze, of_cumsum, of_cumprod};
      static const char* const kNames[] = {"of_softmax", "of_log_softmax", "of_unsqueeze", "of_cumsum", "of_cumprod"};
      const uint32_t k = in.pick(5);
      const int64_t dim = in.dim(xd.size() + (k == 2 ? 1 : 0));
      p.name = kNames[k];
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return kFns[k](s, x, dim, out); };
      break;
    }
    case 33: case 34: {  // losses: logits (N, C) and int64 targets in [0, C) or ignore_index
      of_loss_options_t o;
      PickLossOptions(in, &o);
      const of_tensor_t* target = c.pool.pick();
      if (x == nullptr || xd.size() != 2 || in.flag()) {
        x = Fresh(c, in.rare(8) ? PickFloatDType(in) : of_dtype_float32(), {in.pick(4), 1 + in.pick(4)});
      }
      if (in.pick(4) != 0) {
        const std::vector<int64_t> ld = DimsOf(x);
        const int64_t n = ld.empty() ? 1 : Concrete(ld[0]);
        const int64_t cl = ld.size() < 2 ? 1 : Concrete(ld[1]);
        std::vector<int64_t> values(static_cast<size_t>(std::min<int64_t>(n + (in.rare(16) ? 1 : 0), kMaxNumel)));
        for (int64_t& v : values) v = in.rare(8) ? (in.flag() ? o.ignore_index : in.size()) : in.pick(static_cast<uint32_t>(cl));
        of_tensor_t* t = nullptr;
        const int64_t tdims[1] = {static_cast<int64_t>(values.size())};
        FZ_MUST(of_tensor_from_data(c.session, of_dtype_int64(), tdims, 1, values.data(),
                                    values.size() * sizeof(int64_t), nullptr, &t));
        target = c.pool.add(t);
      }
      const bool nll = kind == 34;
      const bool null_options = in.rare(4);
      p.name = nll ? "of_nll_loss" : "of_cross_entropy";
      p.inputs = {x, target};
      p.call = [=](of_tensor_t** out) {
        return (nll ? of_nll_loss : of_cross_entropy)(s, x, target, null_options ? nullptr : &o, out);
      };
      break;
    }
    case 35: {
      const double prob = in.rare() ? in.scalar() : in.pick(5) / 4.0;
      const int32_t training = in.flag_arg();
      p.name = "of_dropout";
      p.inputs = {x};
      p.draws = true;
      p.call = [=](of_tensor_t** out) { return of_dropout(s, x, prob, training, out); };
      break;
    }
    case 36: {  // where(cond, a, b): a bool condition that broadcasts, often
      const of_tensor_t* cond = c.pool.pick();
      const of_tensor_t* b = c.pool.pick();
      if (x != nullptr && in.flag()) cond = Fresh(c, in.rare(8) ? PickDType(in) : of_dtype_bool(), BroadcastPartner(in, xd));
      if (x != nullptr && in.flag()) b = Fresh(c, in.flag() ? DTypeOfTensor(x) : PickFloatDType(in), BroadcastPartner(in, xd));
      p.name = "of_where";
      p.inputs = {cond, x, b};
      p.call = [=](of_tensor_t** out) { return of_where(s, cond, x, b, out); };
      break;
    }
    case 37: {
      p.name = "of_tensor_detach";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_tensor_detach(x, out); };
      break;
    }
    case 38: {  // embedding: int64 indices, mostly in range, into a (num, dim) weight
      const int64_t num = in.pick(5), width = 1 + in.pick(3);
      const of_tensor_t* w = in.rare(8) ? x : Fresh(c, in.rare(8) ? PickDType(in) : PickFloatDType(in), {num, width});
      const of_tensor_t* idx = SmallIndices(c, in.rare(8) ? std::vector<int64_t>{} : std::vector<int64_t>{in.pick(3), in.pick(4)},
                                            num + (in.rare(8) ? 1 : 0));
      if (in.rare(8)) idx = c.pool.pick();
      const int64_t padding_idx = in.rare() ? in.size() : static_cast<int64_t>(in.pick(static_cast<uint32_t>(num + 2))) - 1;
      p.name = "of_embedding";
      p.inputs = {w, idx};
      p.call = [=](of_tensor_t** out) { return of_embedding(s, w, idx, padding_idx, out); };
      break;
    }
    case 39: case 40: {  // layer_norm over the trailing dims; group_norm; instance_norm
      const uint32_t which = in.pick(3);
      if (x == nullptr || in.flag()) x = Fresh(c, in.rare(8) ? PickDType(in) : PickFloatDType(in), {in.pick(3), 1 + in.pick(4), in.pick(4)});
      const std::vector<int64_t> dims = DimsOf(x);
      const double eps = in.rare() ? in.scalar() : 1e-5;
      const of_dtype_t* dt = DTypeOfTensor(x);
      if (which == 0) {
        const size_t k = in.pick(static_cast<uint32_t>(dims.size() + 2));
        std::vector<int64_t> normalized(dims.end() - static_cast<std::ptrdiff_t>(std::min(k, dims.size())), dims.end());
        if (in.rare(8)) normalized = PickDimList(in, dims.size());
        const of_tensor_t* w = in.flag() ? nullptr : in.rare(8) ? c.pool.pick() : Fresh(c, dt, normalized);
        const of_tensor_t* b = in.flag() ? nullptr : in.rare(8) ? c.pool.pick() : Fresh(c, dt, normalized);
        p.name = "of_layer_norm";
        p.inputs = {x, w, b};
        p.call = [=](of_tensor_t** out) { return of_layer_norm(s, x, normalized.data(), normalized.size(), w, b, eps, out); };
      } else {
        const int64_t ch = dims.size() >= 2 ? Concrete(dims[1]) : 1;
        const of_tensor_t* w = in.flag() ? nullptr : Fresh(c, dt, {in.rare(8) ? ch + 1 : ch});
        const of_tensor_t* b = in.flag() ? nullptr : Fresh(c, dt, {ch});
        if (which == 1) {
          const int64_t groups = in.rare() ? in.size() : 1 + in.pick(static_cast<uint32_t>(std::min<int64_t>(ch, 4)));
          p.name = "of_group_norm";
          p.inputs = {x, w, b};
          p.call = [=](of_tensor_t** out) { return of_group_norm(s, x, groups, w, b, eps, out); };
        } else {
          p.name = "of_instance_norm";
          p.inputs = {x, w, b};
          p.call = [=](of_tensor_t** out) { return of_instance_norm(s, x, w, b, eps, out); };
        }
      }
      break;
    }
    case 41: case 42: {  // scaled_dot_product_attention: q (n, L, E), k (n, S, E), v (n, S, Ev), a mask
      of_attention_options_t o;
      of_attention_options_init(&o);
      o.dropout_p = in.flag() ? 0.0 : in.rare() ? in.scalar() : in.pick(4) / 4.0;
      o.is_causal = in.flag_arg();
      o.scale = in.flag() ? 0.0 : in.rare() ? in.scalar() : 0.5;
      o.struct_size = in.struct_size(sizeof o);
      const of_dtype_t* dt = in.rare(8) ? PickDType(in) : PickFloatDType(in);
      const int64_t n = in.pick(3), l = in.pick(4), sl = in.pick(4), e = 1 + in.pick(3), ev = 1 + in.pick(3);
      const of_tensor_t* q = in.rare(8) ? x : Fresh(c, dt, {n, l, e});
      const of_tensor_t* k = in.rare(8) ? c.pool.pick() : Fresh(c, dt, {n, sl, in.rare(8) ? e + 1 : e});
      const of_tensor_t* v = in.rare(8) ? c.pool.pick() : Fresh(c, dt, {n, in.rare(8) ? sl + 1 : sl, ev});
      const of_tensor_t* mask = nullptr;
      if (in.flag()) mask = in.rare(4) ? c.pool.pick() : Fresh(c, in.flag() ? of_dtype_bool() : dt, {in.flag() ? 1 : l, sl});
      const bool null_options = in.rare(8);
      p.name = "of_scaled_dot_product_attention";
      p.inputs = {q, k, v, mask};
      p.draws = true;
      p.call = [=](of_tensor_t** out) {
        return of_scaled_dot_product_attention(s, q, k, v, mask, null_options ? nullptr : &o, out);
      };
      break;
    }
    case 43: case 44: {  // the elementwise losses on two tensors of x's shape (sometimes not)
      of_loss_options_t o;
      PickLossOptions(in, &o);
      if (in.flag()) o.label_smoothing = 0.0;
      const of_dtype_t* dt = x != nullptr && in.pick(4) != 0 ? DTypeOfTensor(x) : PickFloatDType(in);
      if (x == nullptr || in.rare(4)) x = Fresh(c, dt, {in.pick(3), in.pick(4)});
      const of_tensor_t* target = in.rare(8) ? c.pool.pick() : Fresh(c, in.rare(8) ? PickDType(in) : DTypeOfTensor(x),
                                                                 in.rare(8) ? BroadcastPartner(in, xd) : DimsOf(x));
      const uint32_t which = in.pick(5);
      const double beta = in.rare() ? in.scalar() : in.pick(3) / 2.0;
      const int32_t log_target = in.flag_arg();
      const of_tensor_t* weight = in.flag() ? nullptr : Fresh(c, DTypeOfTensor(x), BroadcastPartner(in, DimsOf(x)));
      const of_tensor_t* pos_weight = in.flag() ? nullptr : Fresh(c, DTypeOfTensor(x), BroadcastPartner(in, DimsOf(x)));
      static const char* const kNames[] = {"of_mse_loss", "of_l1_loss", "of_smooth_l1_loss",
                                           "of_binary_cross_entropy_with_logits", "of_kl_div"};
      p.name = kNames[which];
      p.inputs = {x, target, weight, pos_weight};
      const bool null_options = in.rare(4);
      p.call = [=](of_tensor_t** out) {
        const of_loss_options_t* opts = null_options ? nullptr : &o;
        switch (which) {
          case 0: return of_mse_loss(s, x, target, opts, out);
          case 1: return of_l1_loss(s, x, target, opts, out);
          case 2: return of_smooth_l1_loss(s, x, target, beta, opts, out);
          case 3: return of_binary_cross_entropy_with_logits(s, x, target, weight, pos_weight, opts, out);
          default: return of_kl_div(s, x, target, log_target, opts, out);
        }
      };
      break;
    }
    case 45: {  // weighted cross_entropy / nll_loss, (N, C) or (N, C, d) with class weights
      of_loss_options_t o;
      PickLossOptions(in, &o);
      const bool spatial = in.flag();
      const int64_t n = in.pick(3), cl = 1 + in.pick(4), d = in.pick(3);
      const of_dtype_t* dt = in.rare(8) ? PickDType(in) : PickFloatDType(in);
      const of_tensor_t* logits = spatial ? Fresh(c, dt, {n, cl, d}) : Fresh(c, dt, {n, cl});
      const of_tensor_t* target = SmallIndices(c, spatial ? std::vector<int64_t>{n, d} : std::vector<int64_t>{n},
                                               cl + (in.rare(8) ? 1 : 0));
      const of_tensor_t* weight = in.flag() ? nullptr : Fresh(c, in.rare(8) ? PickDType(in) : dt, {in.rare(8) ? cl + 1 : cl});
      const bool nll = in.flag();
      if (nll) o.label_smoothing = 0.0;
      p.name = nll ? "of_weighted_nll_loss" : "of_weighted_cross_entropy";
      p.inputs = {logits, target, weight};
      p.call = [=](of_tensor_t** out) {
        return (nll ? of_weighted_nll_loss : of_weighted_cross_entropy)(s, logits, target, weight, &o, out);
      };
      break;
    }
    case 46: {  // lstm_cell (two results) and gru_cell
      const bool lstm = in.flag();
      const int64_t n = in.pick(3), ni = 1 + in.pick(3), nh = 1 + in.pick(3), g = lstm ? 4 : 3;
      const of_dtype_t* dt = in.rare(8) ? PickDType(in) : PickFloatDType(in);
      const of_tensor_t* xi = in.rare(8) ? x : Fresh(c, dt, {n, ni});
      const of_tensor_t* h = Fresh(c, dt, {n, in.rare(8) ? nh + 1 : nh});
      const of_tensor_t* cs = Fresh(c, dt, {n, nh});
      const of_tensor_t* w_ih = Fresh(c, dt, {g * nh, ni});
      const of_tensor_t* w_hh = Fresh(c, in.rare(8) ? PickDType(in) : dt, {g * nh, nh});
      const of_tensor_t* b_ih = in.flag() ? nullptr : Fresh(c, dt, {g * nh});
      const of_tensor_t* b_hh = in.flag() ? nullptr : Fresh(c, dt, {in.rare(8) ? nh : g * nh});
      if (lstm) {
        const bool null_second = in.rare(16);
        p.name = "of_lstm_cell";
        p.inputs = {xi, h, cs, w_ih, w_hh, b_ih, b_hh};
        p.must_fail = null_second;
        p.call = [=](of_tensor_t** out) {
          of_tensor_t* second = TensorSentinel();
          of_status_t* st = of_lstm_cell(s, xi, h, cs, w_ih, w_hh, b_ih, b_hh, out, null_second ? nullptr : &second);
          if (st != nullptr && second != TensorSentinel()) Finding("failed of_lstm_cell wrote out_c");
          if (st == nullptr) {
            Inspect(second);
            of_tensor_release(second);
          }
          return st;
        };
      } else {
        p.name = "of_gru_cell";
        p.inputs = {xi, h, w_ih, w_hh, b_ih, b_hh};
        p.call = [=](of_tensor_t** out) { return of_gru_cell(s, xi, h, w_ih, w_hh, b_ih, b_hh, out); };
      }
      break;
    }
    case 47: {  // the activations with parameters, and clamp with scalar or tensor bounds
      const uint32_t which = in.pick(6);
      const double a = in.rare() ? in.scalar() : in.pick(5) / 2.0 - 1.0, b = in.rare() ? in.scalar() : in.pick(5) / 2.0;
      const of_tensor_t* lo = in.flag() ? nullptr : in.rare(4) ? c.pool.pick() : x == nullptr ? nullptr : Fresh(c, DTypeOfTensor(x), BroadcastPartner(in, xd));
      const of_tensor_t* hi = in.flag() ? nullptr : in.rare(4) ? c.pool.pick() : x == nullptr ? nullptr : Fresh(c, in.rare(8) ? PickDType(in) : DTypeOfTensor(x), BroadcastPartner(in, xd));
      static const char* const kNames[] = {"of_softplus", "of_elu", "of_leaky_relu", "of_hardtanh", "of_clamp_scalar", "of_clamp"};
      p.name = kNames[which];
      p.inputs = {x, lo, hi};
      p.call = [=](of_tensor_t** out) {
        switch (which) {
          case 0: return of_softplus(s, x, a, b, out);
          case 1: return of_elu(s, x, a, out);
          case 2: return of_leaky_relu(s, x, a, out);
          case 3: return of_hardtanh(s, x, a, b, out);
          case 4: return of_clamp_scalar(s, x, a, b, out);
          default: return of_clamp(s, x, lo, hi, out);
        }
      };
      break;
    }
    case 48: case 49: {  // gather, index_select, scatter, scatter_add: int64 indices mostly in range
      const uint32_t which = in.pick(4);
      if (x == nullptr || xd.empty() || in.rare(4)) x = Fresh(c, PickDType(in), {1 + in.pick(3), in.pick(4)});
      const std::vector<int64_t> dims = DimsOf(x);
      const int64_t dim = in.dim(dims.size());
      const size_t axis = dims.empty() ? 0 : static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(dims.size()) : dim) % dims.size();
      const int64_t bound = dims.empty() ? 1 : Concrete(dims[axis]);
      std::vector<int64_t> idims = dims;
      for (int64_t& d : idims) d = in.pick(static_cast<uint32_t>(std::min<int64_t>(Concrete(d), 3)) + 1);
      if (which == 1) idims = {in.pick(4)};
      const of_tensor_t* index = in.rare(16) ? c.pool.pick() : SmallIndices(c, idims, bound);
      const of_tensor_t* src = in.rare(8) ? c.pool.pick() : Fresh(c, in.rare(8) ? PickDType(in) : DTypeOfTensor(x), idims);
      static const char* const kNames[] = {"of_gather", "of_index_select", "of_scatter", "of_scatter_add"};
      p.name = kNames[which];
      p.inputs = {x, index, src};
      p.call = [=](of_tensor_t** out) {
        switch (which) {
          case 0: return of_gather(s, x, dim, index, out);
          case 1: return of_index_select(s, x, dim, index, out);
          case 2: return of_scatter(s, x, dim, index, src, out);
          default: return of_scatter_add(s, x, dim, index, src, out);
        }
      };
      break;
    }
    case 50: {  // masked_fill, one_hot, nonzero, tril / triu
      const uint32_t which = in.pick(4);
      const double value = in.scalar();
      const int64_t n = in.rare() ? in.size() : static_cast<int64_t>(in.pick(5)) - 1;
      const of_tensor_t* mask = in.rare(4) ? c.pool.pick() : Fresh(c, in.rare(8) ? PickDType(in) : of_dtype_bool(), BroadcastPartner(in, xd));
      const of_tensor_t* idx = which == 1 && !in.rare(8) ? SmallIndices(c, {in.pick(4)}, std::max<int64_t>(n, 1)) : x;
      static const char* const kNames[] = {"of_masked_fill", "of_one_hot", "of_nonzero", "of_tril"};
      const bool upper = in.flag();
      p.name = which == 3 && upper ? "of_triu" : kNames[which];
      p.inputs = {idx, mask};
      p.call = [=](of_tensor_t** out) {
        switch (which) {
          case 0: return of_masked_fill(s, idx, mask, value, out);
          case 1: return of_one_hot(s, idx, n, out);
          case 2: return of_nonzero(s, idx, out);
          default: return (upper ? of_triu : of_tril)(s, idx, n, out);
        }
      };
      break;
    }
    case 51: {  // flip, roll, repeat, slice, argmin, norm
      const uint32_t which = in.pick(6);
      const std::vector<int64_t> dims = PickDimList(in, xd.size());
      std::vector<int64_t> sizes(in.rare(8) ? dims.size() + 1 : dims.size());
      for (int64_t& v : sizes) v = in.rare() ? in.size() : static_cast<int64_t>(in.pick(5)) - 2;
      std::vector<int64_t> repeats(xd.size() + in.pick(2));
      for (int64_t& v : repeats) v = in.rare() ? in.size() : in.pick(3);
      const int64_t dim = in.dim(xd.size());
      const int64_t start = in.rare() ? in.size() : static_cast<int64_t>(in.pick(7)) - 3;
      const int64_t end = in.rare(4) ? INT64_MAX : static_cast<int64_t>(in.pick(7)) - 3;
      const int64_t step = in.rare() ? in.size() : static_cast<int64_t>(in.pick(5)) - 2;
      const int32_t keepdim = in.flag_arg();
      static const double kP[] = {1.0, 2.0, INFINITY, -INFINITY, 3.0, 0.0};
      const double pnorm = kP[in.pick(6)];
      static const char* const kNames[] = {"of_flip", "of_roll", "of_repeat", "of_slice", "of_argmin", "of_norm"};
      p.name = kNames[which];
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) {
        switch (which) {
          case 0: return of_flip(s, x, dims.data(), dims.size(), out);
          case 1: return of_roll(s, x, sizes.data(), sizes.size(), dims.data(), dims.size(), out);
          case 2: return of_repeat(s, x, repeats.data(), repeats.size(), out);
          case 3: return of_slice(s, x, dim, start, end, step, out);
          case 4: return of_argmin(s, x, dim, keepdim, out);
          default: return of_norm(s, x, pnorm, dims.data(), dims.size(), keepdim, out);
        }
      };
      break;
    }
    case 52: {  // topk and sort: two results, a NULL second one refused
      const bool topk = in.flag();
      const int64_t k = in.rare() ? in.size() : in.pick(4);
      const int64_t dim = in.dim(xd.size());
      const int32_t flag_a = in.flag_arg(), flag_b = in.flag_arg();
      const bool null_second = in.rare(16);
      p.name = topk ? "of_topk" : "of_sort";
      p.inputs = {x};
      p.must_fail = null_second;
      p.call = [=](of_tensor_t** out) {
        of_tensor_t* second = TensorSentinel();
        of_tensor_t** indices = null_second ? nullptr : &second;
        of_status_t* st = topk ? of_topk(s, x, k, dim, flag_a, flag_b, out, indices) : of_sort(s, x, dim, flag_a, out, indices);
        if (st != nullptr && second != TensorSentinel()) Finding(std::string("failed ") + (topk ? "of_topk" : "of_sort") + " wrote out_indices");
        if (st == nullptr) {
          Inspect(second);
          of_tensor_release(second);
        }
        return st;
      };
      break;
    }
    case 53: {  // conv_transpose2d, conv1d, conv_transpose1d with consistent operands most of the time
      const uint32_t which = in.pick(3);
      const int64_t stride = in.rare() ? in.size() : 1 + in.pick(3), padding = in.rare() ? in.size() : in.pick(3);
      const int64_t out_padding = in.rare() ? in.size() : in.pick(2), dilation = in.rare() ? in.size() : 1 + in.pick(2);
      const int64_t groups = in.rare() ? in.size() : 1 + in.pick(2);
      const int64_t g = groups >= 1 && groups <= 2 ? groups : 1;
      const bool two_d = which == 0;
      const of_tensor_t* w = c.pool.pick();
      const of_tensor_t* b = in.flag() ? nullptr : c.pool.pick();
      if (in.pick(4) != 0) {
        const of_dtype_t* dt = in.rare(8) ? PickFloatDType(in) : of_dtype_float32();
        const int64_t n = in.pick(3), ci = g * (1 + in.pick(2)), co = g * (1 + in.pick(2)), k = 1 + in.pick(3);
        std::vector<int64_t> x_dims = {n, ci, in.pick(6)}, w_dims = {which == 2 ? ci : co, (which == 2 ? co : ci) / g, k};
        if (two_d) {
          x_dims.push_back(in.pick(6));
          w_dims = {ci, co / g, k, 1 + in.pick(3)};
        }
        x = Fresh(c, dt, x_dims);
        w = Fresh(c, in.rare(8) ? of_dtype_float64() : dt, w_dims);
        b = in.flag() ? nullptr : Fresh(c, dt, {in.rare(8) ? co + 1 : co});
      }
      const bool null_options = in.rare(8);
      p.name = which == 0 ? "of_conv_transpose2d" : which == 1 ? "of_conv1d" : "of_conv_transpose1d";
      p.inputs = {x, w, b};
      const size_t struct_size = in.struct_size(which == 0   ? sizeof(of_conv_transpose2d_options_t)
                                                : which == 1 ? sizeof(of_conv1d_options_t)
                                                             : sizeof(of_conv_transpose1d_options_t));
      p.call = [=](of_tensor_t** out) {
        if (which == 0) {
          of_conv_transpose2d_options_t o;
          of_conv_transpose2d_options_init(&o);
          o.stride[0] = o.stride[1] = stride;
          o.padding[0] = padding;
          o.output_padding[1] = out_padding;
          o.dilation[0] = dilation;
          o.groups = groups;
          o.struct_size = struct_size;
          return of_conv_transpose2d(s, x, w, b, null_options ? nullptr : &o, out);
        }
        if (which == 1) {
          of_conv1d_options_t o;
          of_conv1d_options_init(&o);
          o.stride = stride;
          o.padding = padding;
          o.dilation = dilation;
          o.groups = groups;
          o.struct_size = struct_size;
          return of_conv1d(s, x, w, b, null_options ? nullptr : &o, out);
        }
        of_conv_transpose1d_options_t o;
        of_conv_transpose1d_options_init(&o);
        o.stride = stride;
        o.padding = padding;
        o.output_padding = out_padding;
        o.dilation = dilation;
        o.groups = groups;
        o.struct_size = struct_size;
        return of_conv_transpose1d(s, x, w, b, null_options ? nullptr : &o, out);
      };
      break;
    }
    case 54: {  // max_pool2d_with_indices (two results), max_unpool2d of int64 indices mostly in range
      if (x == nullptr || xd.size() != 4 || in.flag()) {
        x = Fresh(c, in.rare(8) ? PickDType(in) : of_dtype_float32(), {in.pick(3), 1 + in.pick(2), in.pick(7), in.pick(7)});
      }
      of_pool2d_options_t o;
      PickPoolOptions(in, &o);
      if (in.flag()) {
        const bool null_second = in.rare(16);
        p.name = "of_max_pool2d_with_indices";
        p.inputs = {x};
        p.must_fail = null_second;
        p.call = [=](of_tensor_t** out) {
          of_tensor_t* second = TensorSentinel();
          of_status_t* st = of_max_pool2d_with_indices(s, x, &o, out, null_second ? nullptr : &second);
          if (st != nullptr && second != TensorSentinel()) Finding("failed of_max_pool2d_with_indices wrote out_indices");
          if (st == nullptr) {
            Inspect(second);
            of_tensor_release(second);
          }
          return st;
        };
        break;
      }
      const std::vector<int64_t> dims = DimsOf(x);
      std::vector<int64_t> output_size;
      const uint32_t n_size = in.pick(3) * 2;  // 0, 2 or 4 values
      for (uint32_t i = 0; i < n_size; ++i) output_size.push_back(in.rare() ? in.size() : 1 + in.pick(12));
      const int64_t plane = dims.size() == 4 ? Concrete(dims[2]) * Concrete(dims[3]) * 4 + 1 : 1;
      const of_tensor_t* indices = in.rare(8) ? c.pool.pick() : SmallIndices(c, dims, std::min<int64_t>(plane, 64));
      p.name = "of_max_unpool2d";
      p.inputs = {x, indices};
      p.call = [=](of_tensor_t** out) {
        return of_max_unpool2d(s, x, indices, &o, output_size.data(), output_size.size(), out);
      };
      break;
    }
    case 55: {  // pad in every mode, pixel_shuffle, pixel_unshuffle
      const uint32_t which = in.pick(4);
      if (which >= 2) {
        const int64_t r = in.rare() ? in.size() : 1 + in.pick(3);
        if (x == nullptr || in.flag()) {
          const int64_t rr = r >= 1 && r <= 3 ? r * r : 1;
          x = Fresh(c, PickDType(in), {in.pick(2), (which == 2 ? rr : 1) * (1 + in.pick(2)), r >= 1 && r <= 3 ? r * in.pick(3) : 2, 2 * in.pick(3)});
        }
        p.name = which == 2 ? "of_pixel_shuffle" : "of_pixel_unshuffle";
        p.inputs = {x};
        p.call = [=](of_tensor_t** out) { return (which == 2 ? of_pixel_shuffle : of_pixel_unshuffle)(s, x, r, out); };
        break;
      }
      std::vector<int64_t> pads(in.pick(4) * 2);
      for (int64_t& v : pads) v = in.rare() ? in.size() : static_cast<int64_t>(in.pick(5)) - 1;
      of_pad_options_t o;
      of_pad_options_init(&o);
      const uint8_t mode = in.u8();
      o.mode = mode < 250 ? mode % 4 : static_cast<of_pad_mode_t>(mode);
      o.value = o.mode == OF_PAD_CONSTANT && in.flag() ? in.scalar() : 0.0;
      o.struct_size = in.struct_size(sizeof o);
      const bool null_options = in.rare(8);
      p.name = "of_pad";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_pad(s, x, pads.data(), pads.size(), null_options ? nullptr : &o, out); };
      break;
    }
    case 56: {  // interpolate over 1-3 spatial dims in every mode
      const size_t spatial = 1 + in.pick(3);
      if (x == nullptr || xd.size() != spatial + 2 || in.flag()) {
        std::vector<int64_t> dims = {in.pick(2), 1 + in.pick(2)};
        for (size_t i = 0; i < spatial; ++i) dims.push_back(in.rare(8) ? 0 : 1 + in.pick(5));
        x = Fresh(c, in.rare(8) ? PickDType(in) : of_dtype_float32(), dims);
      }
      std::vector<int64_t> size(in.rare(8) ? in.pick(5) : spatial);
      for (int64_t& v : size) v = in.rare() ? in.size() : in.pick(8);
      of_interpolate_options_t o;
      of_interpolate_options_init(&o);
      const uint8_t mode = in.u8();
      o.mode = mode < 250 ? mode % 4 : static_cast<of_interpolate_mode_t>(mode);
      o.align_corners = in.flag_arg();
      for (double& f : o.scale_factor) f = in.flag() ? 0.0 : (in.rare() ? in.scalar() : in.pick(9) / 4.0);
      o.struct_size = in.struct_size(sizeof o);
      const bool null_options = in.rare(8);
      p.name = "of_interpolate";
      p.inputs = {x};
      p.call = [=](of_tensor_t** out) { return of_interpolate(s, x, size.data(), size.size(), null_options ? nullptr : &o, out); };
      break;
    }
    default: {  // misuse: a NULL out parameter; or the op registry
      if (in.flag()) {
        const NamedUnary& op = kUnary[in.pick(Count(kUnary))];
        p.name = "(an op with a NULL out_tensor)";
        p.inputs = {x};
        p.must_fail = true;
        p.call = [=](of_tensor_t**) { return op.fn(s, x, nullptr); };
      } else {
        const size_t index = in.rare() ? static_cast<size_t>(in.u64()) : in.pick(200);
        p.name = "of_op_name";
        p.makes_tensor = false;
        p.call = [=](of_tensor_t**) {
          size_t count = 0;
          FZ_MUST(of_op_count(&count));
          static const char kUntouched[] = "untouched";
          const char* name = kUntouched;
          of_status_t* st = of_op_name(index, &name);
          if (st == nullptr) {
            FZ_ASSERT(index < count && name != nullptr && name[0] != '\0', "of_op_name gave no name");
          } else {
            FZ_ASSERT(index >= count && name == kUntouched, "of_op_name failed in range or wrote its output");
          }
          return st;
        };
      }
      break;
    }
  }
  return p;
}

// ---- the checks around one call ----------------------------------------------------------------

// What a call must not change unless it says so: a tensor's bytes, whether it requires grad, and its
// grad's bytes (for lazy tensors only their dtype and dims).
struct Fingerprint {
  uint64_t data = 0;
  int32_t requires_grad = -1;
  uint64_t grad = 0;
  bool operator==(const Fingerprint&) const = default;
};
inline Fingerprint Take(const of_tensor_t* t) {
  Fingerprint f;
  if (t == nullptr) return f;
  int32_t lazy = 0;
  FZ_MUST(of_tensor_is_lazy(t, &lazy));
  if (lazy) {
    for (int64_t d : DimsOf(t)) f.data = (f.data ^ static_cast<uint64_t>(d)) * 1099511628211ull;
    f.data ^= reinterpret_cast<uintptr_t>(DTypeOfTensor(t));
    return f;
  }
  int64_t numel = 0;
  FZ_MUST(of_tensor_numel(t, &numel));
  if (numel <= kMaxNumel) f.data = HashTensor(t);
  FZ_MUST(of_tensor_requires_grad(t, &f.requires_grad));
  of_tensor_t* g = nullptr;
  FZ_MUST(of_tensor_grad(t, &g));
  if (g != nullptr) {
    f.grad = HashTensor(g) | 1;
    of_tensor_release(g);
  }
  return f;
}

// The session generator's state cannot be read through the ABI, so each call starts from a known
// seed (of_session_manual_seed before it); afterwards the next draw must equal the first draw of a
// reference session seeded alike whenever the call must not have drawn (it failed, or it is not a
// random op).
class GeneratorCheck {
 public:
  GeneratorCheck() : reference_(NewSession(0)) {}
  ~GeneratorCheck() { of_session_destroy(reference_); }
  void Reseed(of_session_t* s, uint64_t seed) {
    seed_ = seed;
    FZ_MUST(of_session_manual_seed(s, seed));
  }
  void ExpectUntouched(of_session_t* s, const char* call) {
    FZ_MUST(of_session_manual_seed(reference_, seed_));
    if (Draw(s) != Draw(reference_)) Finding(std::string(call) + " drew from the session's generator");
  }

 private:
  static uint64_t Draw(of_session_t* s) {
    of_tensor_t* t = nullptr;
    const int64_t dims[1] = {1};
    FZ_MUST(of_tensor_rand(s, of_dtype_float64(), dims, 1, nullptr, &t));
    uint64_t bits = 0;
    FZ_MUST(of_tensor_copy_to_host(t, &bits, sizeof bits));
    of_tensor_release(t);
    return bits;
  }
  of_session_t* reference_;
  uint64_t seed_ = 0;
};

// FZ_TRACE=1 in the environment prints every call with its operands and status (to read a reproducer).
inline bool Tracing() {
  static const bool on = std::getenv("FZ_TRACE") != nullptr;
  return on;
}
inline std::string Describe(const of_tensor_t* t) {
  if (t == nullptr) return "NULL";
  std::string s = of_dtype_name(DTypeOfTensor(t));
  s += "(";
  for (int64_t d : DimsOf(t)) s += (d == OF_DIM_UNKNOWN ? std::string("?") : std::to_string(d)) + ",";
  return s + ")";
}

// Makes the call p on session s (which may be NULL when p misuses it) and checks it: a failure
// leaves the out parameter, the inputs and the generator as they were; a success of a call that does
// not write leaves the inputs as they were, and of one that does not draw the generator too; a new
// tensor answers every query (Inspect). Returns the new tensor (a reference the caller owns), or NULL.
inline of_tensor_t* RunChecked(of_session_t* s, GeneratorCheck& gen, uint64_t seed, const Prepared& p) {
  gen.Reseed(s, seed);
  std::vector<Fingerprint> before;
  before.reserve(p.inputs.size());
  for (const of_tensor_t* t : p.inputs) before.push_back(Take(t));
  if (Tracing()) {
    std::fprintf(stderr, "call %s(", p.name);
    for (const of_tensor_t* t : p.inputs) std::fprintf(stderr, "%s ", Describe(t).c_str());
    std::fprintf(stderr, ")\n");
  }
  of_tensor_t* out = TensorSentinel();
  of_status_t* status = p.call(&out);
  if (Tracing()) std::fprintf(stderr, "  -> %s %s\n", of_status_code_name(of_status_code(status)), of_status_message(status));
  const of_status_code_t code = Check(status, p.name);
  const bool ok = code == OF_STATUS_OK;
  if (!ok && out != TensorSentinel()) Finding(std::string("failed ") + p.name + " wrote its out parameter");
  if (ok && p.must_fail) Finding(std::string(p.name) + " succeeded, but it is misuse");
  if (!ok || !p.writes) {
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (Take(p.inputs[i]) != before[i]) {
        Finding(std::string(ok ? "successful " : "failed ") + p.name + " changed its input " + std::to_string(i));
      }
    }
  }
  if (!ok || !p.draws) gen.ExpectUntouched(s, p.name);
  if (!ok || !p.makes_tensor) return nullptr;
  if (out == nullptr || out == TensorSentinel()) Finding(std::string(p.name) + " succeeded without a tensor");
  Inspect(out);
  return out;
}

// Adds t to the pool when it is small enough to work on, else releases it.
inline void Keep(Pool& pool, of_tensor_t* t) {
  if (t == nullptr) return;
  int64_t numel = 0;
  of_status_t* st = of_tensor_numel(t, &numel);
  if (st != nullptr) {  // a lazy tensor with unknown dims
    of_status_destroy(st);
    numel = 0;
  }
  if (numel > kMaxNumel) {
    of_tensor_release(t);
    return;
  }
  pool.add(t);
}

}  // namespace fz
