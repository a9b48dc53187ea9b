// fuzz_ops: a structured fuzzer of the eager C ABI. The bytes are decoded into up to kMaxSteps steps
// on one seeded single-thread session: tensor creations (every dtype; shapes with 0-size and
// broadcasting dims; from data, adopted memory, empty / zeros / ones / full / rand / randn / arange;
// options structs with odd sizes and devices), op calls from the header's op section with attributes
// from the bytes (negative and out-of-range dims, huge / NaN / inf scalars, options structs with
// extreme values; views such as transpose, narrow, expand feeding later ops), autograd
// (requires_grad, backward, grad, set_grad, grad mode), initialisers, optimizers (create, step,
// zero_grad, set_lr, destroy), dtype and dim-symbol queries, and misuse (NULL handles and out
// parameters, wrong dtypes, invalid flags).
//
// A finding is: a crash or sanitizer report (ASan, UBSan, LeakSanitizer), a hang, an
// OF_STATUS_INTERNAL status (aborts, printing the message), or a broken contract of the header: a
// failed call that wrote its out parameter, changed its input tensors (bytes, requires_grad, grad) or
// drew from the session's generator; a successful call that changed inputs it must only read, or a
// non-random one that drew; a new tensor whose queries disagree (Inspect); an adopted buffer whose
// deleter did not run exactly once.
#include <algorithm>

#include "op_calls.h"

namespace {

using namespace fz;

constexpr int kMaxSteps = 32;

// Adopted buffers: each of_tensor_adopt_data call must call its deleter exactly once.
int g_adopted = 0;
int g_deleted = 0;
void CountingDeleter(void* data, void* user_data) {
  (void)data;
  ++g_deleted;
  std::free(user_data);
}

struct Optim {
  of_optimizer_t* handle;
  std::vector<const of_tensor_t*> params;  // borrowed: the optimizer holds references
};

struct State {
  of_session_t* session;
  Bytes& in;
  Pool& pool;
  GeneratorCheck& gen;
  std::vector<Optim> optimizers;
  uint64_t seed = 1;
  uint64_t next_seed() { return seed++ * 0x9E3779B97F4A7C15ull; }
  of_tensor_t* run(const Prepared& p) { return RunChecked(session, gen, next_seed(), p); }
};

// The dims of a creation: a small shape, or (rarely) one that is invalid or too large.
std::vector<int64_t> CreationDims(Bytes& in) {
  std::vector<int64_t> dims = PickShape(in);
  if (in.rare(24) && !dims.empty()) {
    static const int64_t kBad[] = {-1, OF_DIM_UNKNOWN, int64_t{1} << 31, int64_t{1} << 40,
                                   std::numeric_limits<int64_t>::max(), int64_t{1} << 62, -5, 1 << 27};
    dims[in.pick(static_cast<uint32_t>(dims.size()))] = kBad[in.pick(8)];
  }
  if (Tracing()) {
    std::fprintf(stderr, "creation dims (");
    for (int64_t d : dims) std::fprintf(stderr, "%lld,", static_cast<long long>(d));
    std::fprintf(stderr, ")\n");
  }
  return dims;
}

const of_tensor_options_t* CreationOptions(Bytes& in, of_tensor_options_t* o) {
  if (!in.rare(8)) return nullptr;
  of_tensor_options_init(o);
  const uint8_t b = in.u8();
  o->device_type = b < 128 ? 0 : b < 192 ? OF_DEVICE_CPU : b < 224 ? OF_DEVICE_CUDA : static_cast<int32_t>(b);
  o->device_index = in.rare() ? -1 : 0;
  o->struct_size = in.struct_size(sizeof *o);
  return o;
}

void Create(State& st) {
  Bytes& in = st.in;
  of_session_t* s = in.rare(64) ? nullptr : st.session;
  const uint32_t kind = in.pick(9);
  const of_dtype_t* dtype = PickDType(in);
  const std::vector<int64_t> dims = CreationDims(in);
  const bool null_dims = dims.empty() && in.flag();
  const int64_t* dp = null_dims ? nullptr : dims.data();
  of_tensor_options_t storage;
  const of_tensor_options_t* options = CreationOptions(in, &storage);
  Prepared p;
  p.inputs = {};
  switch (kind) {
    case 0: case 1: {  // from data, nbytes sometimes wrong
      size_t nbytes = 0;
      if (dtype != nullptr && Numel(dims) >= 0 && Numel(dims) <= kMaxNumel) {
        nbytes = static_cast<size_t>(Numel(dims)) * of_dtype_size(dtype);
      }
      if (in.rare(16)) nbytes += 1;
      std::vector<unsigned char> data(nbytes);
      in.fill(data.data(), data.size());
      const bool null_data = in.rare(32);
      p.name = "of_tensor_from_data";
      p.call = [=](of_tensor_t** out) {
        return of_tensor_from_data(s, dtype, dp, dims.size(), null_data ? nullptr : data.data(), data.size(), options,
                                   out);
      };
      break;
    }
    case 2: {  // adopted memory with a counting deleter; sometimes misaligned or of the wrong size
      size_t nbytes = 0;
      if (dtype != nullptr && Numel(dims) >= 0 && Numel(dims) <= kMaxNumel) {
        nbytes = static_cast<size_t>(Numel(dims)) * of_dtype_size(dtype);
      }
      const size_t offset = in.rare(8) ? 1 : 0;
      if (in.rare(16)) nbytes += 2;
      char* block = static_cast<char*>(std::aligned_alloc(64, (nbytes + offset + 64) / 64 * 64));
      in.fill(block + offset, nbytes);
      const bool with_deleter = !in.rare(8);
      p.name = "of_tensor_adopt_data";
      p.call = [=](of_tensor_t** out) {
        const int deleted = g_deleted;
        if (with_deleter) ++g_adopted;
        of_status_t* status = of_tensor_adopt_data(s, dtype, dp, dims.size(), block + offset, nbytes,
                                                   with_deleter ? CountingDeleter : nullptr, block, out);
        if (status != nullptr && with_deleter && g_deleted != deleted + 1) {
          Finding("a failed of_tensor_adopt_data did not call its deleter once");
        }
        if (status == nullptr && g_deleted != deleted) Finding("of_tensor_adopt_data called its deleter early");
        return status;
      };
      if (!with_deleter) {
        // NULL deleter: the memory stays the caller's, so the tensor over it is made, read and
        // released here, before the memory is freed.
        of_tensor_t* t = st.run(p);
        if (t != nullptr) {
          HashTensor(t);
          of_tensor_release(t);
        }
        std::free(block);
        return;
      }
      break;
    }
    case 3: case 4: {
      static const char* const kNames[] = {"of_tensor_zeros", "of_tensor_ones", "of_tensor_empty", "of_tensor_rand",
                                           "of_tensor_randn"};
      const uint32_t k = in.pick(5);
      p.name = kNames[k];
      p.draws = k >= 3;
      p.call = [=](of_tensor_t** out) {
        switch (k) {
          case 0: return of_tensor_zeros(s, dtype, dp, dims.size(), options, out);
          case 1: return of_tensor_ones(s, dtype, dp, dims.size(), options, out);
          case 2: return of_tensor_empty(s, dtype, dp, dims.size(), options, out);
          case 3: return of_tensor_rand(s, dtype, dp, dims.size(), options, out);
          default: return of_tensor_randn(s, dtype, dp, dims.size(), options, out);
        }
      };
      if (k == 2) {  // uninitialised contents: made deterministic before anything reads them
        of_tensor_t* t = st.run(p);
        if (t != nullptr) {
          int32_t lazy = 0;
          FZ_MUST(of_tensor_is_lazy(t, &lazy));
          if (of_dtype_is_floating_point(DTypeOfTensor(t))) {
            FZ_MUST(of_init_constant(st.session, t, 0.0));
          } else if (DTypeOfTensor(t) == of_dtype_bool()) {
            size_t nbytes = 0;
            FZ_MUST(of_tensor_nbytes(t, &nbytes));
            if (nbytes <= (size_t{1} << 20)) {
              std::vector<unsigned char> bytes(nbytes, 0xA5);
              FZ_MUST(of_tensor_copy_to_host(t, bytes.data(), nbytes));
              FZ_ASSERT(std::all_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b == 0; }),
                        "of_tensor_empty: a bool tensor is not all false");
            }
          } else {
            of_tensor_release(t);  // garbage integers: results would differ from run to run
            return;
          }
          Keep(st.pool, t);
        }
        return;
      }
      break;
    }
    case 5: {
      const double value = in.scalar();
      p.name = "of_tensor_full";
      p.call = [=](of_tensor_t** out) { return of_tensor_full(s, dtype, dp, dims.size(), value, options, out); };
      break;
    }
    case 6: {  // arange: mostly short ranges, sometimes any three scalars
      double start = static_cast<double>(in.pick(9)) - 4, end = static_cast<double>(in.pick(40)) - 8;
      double step = static_cast<double>(in.pick(7)) / 2 - 1.5;
      if (in.rare(8)) start = in.scalar();
      if (in.rare(8)) end = in.scalar();
      if (in.rare(8)) step = in.scalar();
      // keep the element count within the caps of the harness (a huge count is exercised with an
      // end past the allocation limit: 1e300)
      if (std::isfinite(start) && std::isfinite(end) && std::isfinite(step) && step != 0 &&
          std::fabs((end - start) / step) > kMaxNumel && std::fabs((end - start) / step) < 1e18) {
        end = start;
      }
      p.name = "of_tensor_arange";
      p.call = [=](of_tensor_t** out) { return of_tensor_arange(s, start, end, step, dtype, options, out); };
      break;
    }
    default: {  // a view of a pool tensor or an op result, through the op layer
      OpContext c{st.session, in, st.pool};
      Keep(st.pool, st.run(PrepareOp(c)));
      return;
    }
  }
  Keep(st.pool, st.run(p));
}

void Autograd(State& st) {
  Bytes& in = st.in;
  of_tensor_t* t = st.pool.pick();
  Prepared p;
  p.inputs = {t};
  p.makes_tensor = false;
  p.writes = true;
  switch (in.pick(7)) {
    case 0: case 1: {
      const int32_t flag = in.flag_arg();
      p.name = "of_tensor_set_requires_grad";
      p.call = [=](of_tensor_t**) { return of_tensor_set_requires_grad(t, flag); };
      break;
    }
    case 2: case 3: {  // backward from t, or from the sum of t (a scalar root)
      if (t != nullptr && in.flag()) {
        Prepared sum;
        sum.name = "of_sum";
        sum.inputs = {t};
        sum.call = [=](of_tensor_t** out) { return of_sum(st.session, t, nullptr, 0, 0, out); };
        of_tensor_t* root = st.run(sum);
        if (root == nullptr) return;
        t = st.pool.add(root);
      }
      const of_tensor_t* grad = nullptr;
      if (in.flag()) grad = st.pool.pick();
      if (t != nullptr && in.flag()) {
        Prepared ones;
        ones.name = "of_ones_like";
        ones.inputs = {t};
        ones.call = [=](of_tensor_t** out) { return of_ones_like(st.session, t, out); };
        of_tensor_t* g = st.run(ones);
        if (g != nullptr) grad = st.pool.add(g);
      }
      const int32_t retain = in.flag_arg();
      of_session_t* s = in.rare(64) ? nullptr : st.session;
      p.name = "of_tensor_backward";
      p.inputs = {t, grad};  // and every pool tensor: a failed backward must not have changed a grad
      for (size_t i = 0; i < st.pool.size(); ++i) p.inputs.push_back(st.pool.at(i));
      p.call = [=](of_tensor_t**) { return of_tensor_backward(s, t, grad, retain); };
      break;
    }
    case 4: {  // the grad: NULL or a tensor on success
      of_tensor_t* g = TensorSentinel();
      const of_status_code_t code = FZ_CHECK(of_tensor_grad(t, &g));
      if (code != OF_STATUS_OK) {
        FZ_ASSERT(g == TensorSentinel(), "a failed of_tensor_grad wrote its out parameter");
        return;
      }
      FZ_ASSERT(g != TensorSentinel(), "of_tensor_grad succeeded without writing its out parameter");
      if (g != nullptr) {
        Inspect(g);
        st.pool.add(g);
      }
      return;
    }
    case 5: {
      const of_tensor_t* g = in.flag() ? nullptr : st.pool.pick();
      p.name = "of_tensor_set_grad";
      p.inputs = {t, g};
      p.call = [=](of_tensor_t**) { return of_tensor_set_grad(t, g); };
      break;
    }
    default: {  // grad mode: an invalid value must leave the mode and *out_previous alone
      const int32_t enabled = in.flag_arg();
      int32_t before = -1;
      FZ_MUST(of_grad_is_enabled(&before));
      int32_t previous = 42;
      const of_status_code_t code = FZ_CHECK(of_grad_set_enabled(enabled, in.flag() ? &previous : nullptr));
      int32_t now = -1;
      FZ_MUST(of_grad_is_enabled(&now));
      if (code != OF_STATUS_OK) {
        FZ_ASSERT(now == before && (previous == 42), "a failed of_grad_set_enabled changed something");
      } else {
        FZ_ASSERT(now == enabled && (previous == 42 || previous == before), "of_grad_set_enabled");
      }
      return;
    }
  }
  st.run(p);
}

void Init(State& st) {
  Bytes& in = st.in;
  of_tensor_t* t = st.pool.pick();
  of_session_t* s = in.rare(64) ? nullptr : st.session;
  const double a = in.rare(4) ? in.scalar() : static_cast<double>(in.pick(5)) - 2;
  const double b = in.rare(4) ? in.scalar() : static_cast<double>(in.pick(5));
  of_kaiming_options_t ko;
  of_kaiming_options_init(&ko);
  ko.a = in.rare(4) ? in.scalar() : 0.0;
  ko.mode = in.rare(8) ? static_cast<of_fan_mode_t>(in.u8()) : in.pick(2);
  ko.nonlinearity = in.rare(8) ? static_cast<of_nonlinearity_t>(in.u8()) : in.pick(5);
  ko.struct_size = in.struct_size(sizeof ko);
  const bool null_options = in.rare(4);
  const uint32_t k = in.pick(7);
  static const char* const kNames[] = {"of_init_uniform",        "of_init_normal",         "of_init_constant",
                                       "of_init_kaiming_uniform", "of_init_kaiming_normal", "of_init_xavier_uniform",
                                       "of_init_xavier_normal"};
  Prepared p;
  p.name = kNames[k];
  p.inputs = {t};
  p.writes = true;
  p.draws = k != 2;
  p.makes_tensor = false;
  p.call = [=](of_tensor_t**) {
    const of_kaiming_options_t* o = null_options ? nullptr : &ko;
    switch (k) {
      case 0: return of_init_uniform(s, t, a, b);
      case 1: return of_init_normal(s, t, a, b);
      case 2: return of_init_constant(s, t, a);
      case 3: return of_init_kaiming_uniform(s, t, o);
      case 4: return of_init_kaiming_normal(s, t, o);
      case 5: return of_init_xavier_uniform(s, t, b);
      default: return of_init_xavier_normal(s, t, b);
    }
  };
  st.run(p);
}

void Optimizers(State& st) {
  Bytes& in = st.in;
  const uint32_t k = in.pick(6);
  if (k <= 1 || st.optimizers.empty()) {  // create SGD or Adam over 0..3 pool tensors
    std::vector<of_tensor_t*> params(in.rare(16) ? 0 : 1 + in.pick(3));
    for (of_tensor_t*& t : params) t = st.pool.pick();
    if (params.size() > 1 && in.rare(8)) params[1] = params[0];  // a duplicate
    of_sgd_options_t so;
    of_sgd_options_init(&so);
    of_adam_options_t ao;
    of_adam_options_init(&ao);
    if (in.flag()) {
      so.lr = ao.lr = in.rare(4) ? in.scalar() : 0.1;
      so.momentum = in.rare(4) ? in.scalar() : in.pick(3) / 2.0;
      so.dampening = in.rare(4) ? in.scalar() : 0.0;
      so.weight_decay = ao.weight_decay = in.rare(4) ? in.scalar() : in.pick(2) / 10.0;
      so.nesterov = in.flag_arg();
      ao.beta1 = in.rare(4) ? in.scalar() : 0.9;
      ao.beta2 = in.rare(4) ? in.scalar() : 0.999;
      ao.eps = in.rare(4) ? in.scalar() : 1e-8;
      ao.decoupled_weight_decay = in.flag_arg();
      so.struct_size = in.struct_size(sizeof so);
      ao.struct_size = in.struct_size(sizeof ao);
    }
    const bool adam = in.flag();
    const bool null_options = in.rare(8);
    const bool null_params = params.empty() && in.flag();
    of_session_t* s = in.rare(64) ? nullptr : st.session;
    std::vector<Fingerprint> before;
    for (of_tensor_t* t : params) before.push_back(Take(t));
    of_optimizer_t* const sentinel = reinterpret_cast<of_optimizer_t*>(TensorSentinel());
    of_optimizer_t* opt = sentinel;
    of_tensor_t* const* pp = null_params ? nullptr : params.data();
    const of_status_code_t code =
        adam ? FZ_CHECK(of_optimizer_adam_create(s, pp, params.size(), null_options ? nullptr : &ao, &opt))
             : FZ_CHECK(of_optimizer_sgd_create(s, pp, params.size(), null_options ? nullptr : &so, &opt));
    for (size_t i = 0; i < params.size(); ++i) {
      FZ_ASSERT(Take(params[i]) == before[i], "creating an optimizer changed a parameter");
    }
    if (code != OF_STATUS_OK) {
      FZ_ASSERT(opt == sentinel, "a failed optimizer create wrote its out parameter");
      return;
    }
    FZ_ASSERT(opt != sentinel && opt != nullptr, "an optimizer create succeeded without an optimizer");
    double lr = -1;
    FZ_MUST(of_optimizer_lr(opt, &lr));
    if (st.optimizers.size() >= 3) {
      of_optimizer_destroy(opt);
      return;
    }
    st.optimizers.push_back({opt, {params.begin(), params.end()}});
    return;
  }
  const size_t index = in.pick(static_cast<uint32_t>(st.optimizers.size()));
  Optim& o = st.optimizers[index];
  of_optimizer_t* handle = in.rare(64) ? nullptr : o.handle;
  Prepared p;
  p.inputs = o.params;
  p.makes_tensor = false;
  p.writes = true;
  switch (k) {
    case 2: case 3: {
      of_session_t* s = in.rare(64) ? nullptr : st.session;
      p.name = "of_optimizer_step";
      p.call = [=](of_tensor_t**) { return of_optimizer_step(s, handle); };
      break;
    }
    case 4: {
      p.name = "of_optimizer_zero_grad";
      p.call = [=](of_tensor_t**) { return of_optimizer_zero_grad(handle); };
      break;
    }
    default: {
      if (in.flag()) {  // destroy it
        of_optimizer_destroy(o.handle);
        st.optimizers.erase(st.optimizers.begin() + static_cast<std::ptrdiff_t>(index));
        return;
      }
      const double lr = in.rare(2) ? in.scalar() : 0.01;
      double before = -1, after = -2;
      FZ_MUST(of_optimizer_lr(o.handle, &before));
      const of_status_code_t code = FZ_CHECK(of_optimizer_set_lr(handle, lr));
      FZ_MUST(of_optimizer_lr(o.handle, &after));
      if (code != OF_STATUS_OK) {
        FZ_ASSERT(std::memcmp(&before, &after, sizeof before) == 0, "a failed of_optimizer_set_lr changed the lr");
      } else {
        FZ_ASSERT(after == lr, "of_optimizer_set_lr did not set the lr");
      }
      return;
    }
  }
  st.run(p);
}

// Queries of dtypes and dim symbols: interned identities, symmetric promotion, untouched outputs.
void Queries(State& st) {
  Bytes& in = st.in;
  const of_dtype_t* const sentinel = reinterpret_cast<const of_dtype_t*>(TensorSentinel());
  switch (in.pick(5)) {
    case 0: {
      const int32_t code = in.rare(8) ? static_cast<int32_t>(in.u32()) : in.pick(12);
      const of_dtype_t* d = sentinel;
      if (FZ_CHECK(of_dtype_from_code(code, &d)) == OF_STATUS_OK) {
        FZ_ASSERT(of_dtype_code(d) == code, "of_dtype_from_code");
      } else {
        FZ_ASSERT(d == sentinel, "a failed of_dtype_from_code wrote its out parameter");
      }
      return;
    }
    case 1: {
      static const char* const kNames[] = {"float32", "float", "double", "half", "int", "long", "short", "bool",
                                           "bfloat16", "uint8", "", "Float32", "float32 ", "complex64", nullptr};
      const char* name = kNames[in.pick(15)];
      const of_dtype_t* d = sentinel;
      if (FZ_CHECK(of_dtype_from_name(name, &d)) != OF_STATUS_OK) {
        FZ_ASSERT(d == sentinel, "a failed of_dtype_from_name wrote its out parameter");
      }
      return;
    }
    case 2: {
      const uint8_t code = in.u8() % 8, bits = static_cast<uint8_t>(in.rare() ? in.u8() : 8 << in.pick(4));
      const uint16_t lanes = in.rare() ? in.u16() : 1;
      const of_dtype_t* d = sentinel;
      if (FZ_CHECK(of_dtype_from_dlpack(code, bits, lanes, &d)) == OF_STATUS_OK) {
        uint8_t c2 = 0, b2 = 0;
        uint16_t l2 = 0;
        FZ_MUST(of_dtype_to_dlpack(d, &c2, &b2, &l2));
        FZ_ASSERT(b2 == bits && l2 == lanes, "DLPack dtype round trip");
      } else {
        FZ_ASSERT(d == sentinel, "a failed of_dtype_from_dlpack wrote its out parameter");
      }
      return;
    }
    case 3: {
      const of_dtype_t* a = PickDType(in);
      const of_dtype_t* b = PickDType(in);
      const of_dtype_t *ab = sentinel, *ba = sentinel;
      const of_status_code_t c1 = FZ_CHECK(of_dtype_promote(a, b, &ab));
      const of_status_code_t c2 = FZ_CHECK(of_dtype_promote(b, a, &ba));
      FZ_ASSERT(c1 == c2 && ab == ba, "of_dtype_promote is not symmetric");
      if (c1 != OF_STATUS_OK) FZ_ASSERT(ab == sentinel, "a failed of_dtype_promote wrote its out parameter");
      return;
    }
    default: {
      static const char* const kNames[] = {"N", "M", "seq", "batch", "", "1x", "?", "N ", "é", nullptr};
      const char* name = kNames[in.pick(10)];
      int64_t dim = 4242;
      of_session_t* s = in.rare(16) ? nullptr : st.session;
      if (FZ_CHECK(of_session_dim_symbol(s, name, &dim)) != OF_STATUS_OK) {
        FZ_ASSERT(dim == 4242, "a failed of_session_dim_symbol wrote its out parameter");
        return;
      }
      FZ_ASSERT(dim < 0 && of_dim_is_symbol(dim) == 1 && of_dim_is_known(dim) == 0, "a dim symbol");
      const char* back = nullptr;
      size_t length = 0;
      FZ_MUST(of_dim_symbol_name(dim, &back, &length));
      FZ_ASSERT(length == std::strlen(name) && std::memcmp(back, name, length) == 0, "a dim symbol's name");
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static GeneratorCheck* gen = new GeneratorCheck();  // one reference session for the process
  Bytes in(data, size);
  FZ_MUST(of_grad_set_enabled(1, nullptr));
  of_session_t* session = NewSession(in.u8());
  {
    Pool pool(in);
    State st{session, in, pool, *gen, {}};
    for (int step = 0; step < kMaxSteps && !in.empty(); ++step) {
      pool.flush();
      const uint8_t what = in.u8();
      if (what < 48) {
        Create(st);
      } else if (what < 192) {
        OpContext c{session, in, pool};
        Keep(pool, st.run(PrepareOp(c)));
      } else if (what < 212) {
        Autograd(st);
      } else if (what < 224) {
        Init(st);
      } else if (what < 240) {
        Optimizers(st);
      } else if (what < 250) {
        Queries(st);
      } else if (pool.size() > 0) {  // retain and release a pool tensor
        of_tensor_t* t = pool.at(in.pick(static_cast<uint32_t>(pool.size())));
        of_tensor_retain(t);
        of_tensor_release(t);
      }
    }
    // Everything goes, in an order chosen by the bytes: the session first or last.
    const bool session_first = in.flag();
    if (session_first) {
      of_session_destroy(session);
      session = nullptr;
    }
    for (Optim& o : st.optimizers) of_optimizer_destroy(o.handle);
    pool.clear();
  }
  of_session_destroy(session);
  if (g_adopted != g_deleted) {
    Finding("adopted buffers: " + std::to_string(g_adopted) + " adopted, " + std::to_string(g_deleted) +
            " deleters called once everything was released");
  }
  FZ_MUST(of_grad_set_enabled(1, nullptr));
  return 0;
}
