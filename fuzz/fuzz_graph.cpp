// fuzz_graph: a structured fuzzer of the lazy-graph C ABI. The bytes are decoded into a graph build
// on a seeded single-thread session: graph options (odd sizes and values), eager parameters (leaves
// with requires_grad, or registered with of_graph_add_parameter), inputs whose dims mix sizes,
// OF_DIM_UNKNOWN and named symbols from of_session_dim_symbol (and invalid dims), op calls on the lazy
// tensors and on eager tensors made during the build (free tensors) — the op choices of fuzz_ops —,
// a traced backward and an optimizer attached with of_graph_add_optimizer, outputs, end_build. Then
// queries (counts, free tensors, dump, memory stats), runs with concrete sizes that match the declared
// dims or not (dtype, rank, size, symbol mismatches; wrong input and output counts), misuse (building
// twice, lazy tensors outside their build or in a second graph's build, running an unbuilt graph,
// NULL handles), and at last the session, the graphs, the optimizer and the tensors destroyed in an
// order chosen by the bytes (any order is documented as safe), with a run in between now and then.
//
// A finding is: a crash or sanitizer report, a hang, an OF_STATUS_INTERNAL status, a failed call that
// wrote its out parameters (out tensors, graph handle) or changed its inputs, the parameters or the
// generator (a failed run included), a successful run whose outputs do not answer their queries, a
// lazy tensor that can be copied out, and a dump whose length disagrees with itself.
#include "op_calls.h"

namespace {

using namespace fz;

constexpr int kMaxOps = 16;
constexpr int kMaxRuns = 4;

struct InputSpec {
  const of_dtype_t* dtype;
  std::vector<int64_t> dims;  // sizes, OF_DIM_UNKNOWN, symbols
};

struct GraphState {
  of_graph_t* graph = nullptr;
  std::vector<InputSpec> inputs;
  size_t outputs = 0;
  bool built = false;
};

struct Harness {
  of_session_t* session;
  Bytes& in;
  Pool& pool;
  GeneratorCheck& gen;
  std::vector<of_tensor_t*> params;  // eager leaves; owned references
  std::vector<int64_t> symbols;
  of_optimizer_t* optimizer = nullptr;
  uint64_t seed = 1;
  of_tensor_t* run(const Prepared& p) { return RunChecked(session, gen, seed++ * 0x9E3779B97F4A7C15ull, p); }
};

int64_t PickInputDim(Harness& h) {
  const uint8_t b = h.in.u8();
  if (b < 96) return b % 5;
  if (b < 160) return OF_DIM_UNKNOWN;
  if (b < 248 && !h.symbols.empty()) return h.symbols[b % h.symbols.size()];
  static const int64_t kBad[] = {-3, -1, std::numeric_limits<int64_t>::max(), OF_DIM_UNKNOWN + 1};
  return kBad[b % 4];
}

// One build of `gs` on this thread: inputs, parameters, ops, backward, optimizer, outputs, end.
void Build(Harness& h, GraphState& gs, int max_ops) {
  Bytes& in = h.in;
  if (FZ_CHECK(of_graph_begin_build(gs.graph)) != OF_STATUS_OK) return;
  if (in.rare(32)) {
    FZ_ASSERT(FZ_CHECK(of_graph_begin_build(gs.graph)) == OF_STATUS_FAILED_PRECONDITION, "a second begin_build");
  }
  // inputs
  const uint32_t n_inputs = in.pick(4);
  static const char* const kInputNames[] = {"x", "y", "z", "x", "", nullptr};
  for (uint32_t i = 0; i < n_inputs; ++i) {
    InputSpec spec;
    spec.dtype = in.rare(4) ? PickDType(in) : of_dtype_float32();
    spec.dims.resize(in.pick(5));
    for (int64_t& d : spec.dims) d = PickInputDim(h);
    const char* name = in.rare(8) ? kInputNames[in.pick(6)] : kInputNames[i];
    of_tensor_t* t = TensorSentinel();
    if (FZ_CHECK(of_graph_add_input(gs.graph, name, spec.dtype, spec.dims.data(), spec.dims.size(), &t)) !=
        OF_STATUS_OK) {
      FZ_ASSERT(t == TensorSentinel(), "a failed of_graph_add_input wrote its out parameter");
      continue;
    }
    FZ_ASSERT(Inspect(t) == -1, "a graph input is not lazy");
    FZ_ASSERT(DimsOf(t) == spec.dims, "a graph input's dims are not the declared ones");
    gs.inputs.push_back(spec);
    h.pool.add(t);
  }
  // parameters: registered by name now and then
  for (of_tensor_t* p : h.params) {
    if (in.rare(3)) {
      static const char* const kNames[] = {"w", "b", "w", ""};
      FZ_CHECK(of_graph_add_parameter(gs.graph, p, kNames[in.pick(4)]));
    }
  }
  // ops (lazy on lazy tensors; eager tensors made on the way are free tensors)
  const int n_ops = static_cast<int>(in.pick(static_cast<uint32_t>(max_ops) + 1));
  for (int i = 0; i < n_ops && !in.empty(); ++i) {
    h.pool.flush();
    OpContext c{h.session, in, h.pool};
    Keep(h.pool, h.run(PrepareOp(c)));
  }
  // backward from a scalar made of a pool tensor, and an optimizer over the parameters
  if (!h.params.empty() && in.flag()) {
    of_tensor_t* t = h.pool.pick();
    Prepared sum;
    sum.name = "of_sum";
    sum.inputs = {t};
    sum.call = [&](of_tensor_t** out) { return of_sum(h.session, t, nullptr, 0, 0, out); };
    of_tensor_t* root = h.run(sum);
    if (root != nullptr) {
      h.pool.add(root);
      FZ_CHECK(of_tensor_backward(h.session, root, nullptr, in.flag_arg()));
      if (in.flag()) {
        if (h.optimizer == nullptr) {
          of_sgd_options_t o;
          of_sgd_options_init(&o);
          o.lr = 0.01;
          o.momentum = in.pick(2) * 0.9;
          FZ_CHECK(of_optimizer_sgd_create(h.session, h.params.data(), h.params.size(), &o, &h.optimizer));
        }
        if (h.optimizer != nullptr) FZ_CHECK(of_graph_add_optimizer(gs.graph, h.optimizer));
      }
    }
  }
  // outputs
  const uint32_t n_outputs = in.pick(4);
  for (uint32_t i = 0; i < n_outputs; ++i) {
    if (FZ_CHECK(of_graph_add_output(gs.graph, h.pool.pick())) == OF_STATUS_OK) ++gs.outputs;
  }
  gs.built = FZ_CHECK(of_graph_end_build(gs.graph)) == OF_STATUS_OK;
  if (in.rare(16)) {
    FZ_ASSERT(FZ_CHECK(of_graph_begin_build(gs.graph)) == OF_STATUS_FAILED_PRECONDITION || !gs.built,
              "begin_build of a built graph");
    if (gs.built) {
      of_tensor_t* t = TensorSentinel();
      const int64_t dims[1] = {2};
      FZ_ASSERT(FZ_CHECK(of_graph_add_input(gs.graph, "late", of_dtype_float32(), dims, 1, &t)) != OF_STATUS_OK &&
                    t == TensorSentinel(),
                "add_input after end_build");
    }
  }
}

// Counts, free tensors, the dump and the memory stats: they answer and agree with themselves.
void Queries(Harness& h, const GraphState& gs) {
  Bytes& in = h.in;
  size_t count = 99;
  FZ_MUST(of_graph_input_count(gs.graph, &count));
  FZ_ASSERT(count == gs.inputs.size(), "of_graph_input_count");
  FZ_MUST(of_graph_output_count(gs.graph, &count));
  FZ_ASSERT(count == gs.outputs, "of_graph_output_count");
  FZ_MUST(of_graph_free_tensor_count(gs.graph, &count));
  for (size_t i = 0; i <= count; ++i) {
    const char* name = "untouched";
    const of_status_code_t code = FZ_CHECK(of_graph_free_tensor_name(gs.graph, i, &name));
    FZ_ASSERT(i < count ? code == OF_STATUS_OK && name != nullptr
                        : code == OF_STATUS_OUT_OF_RANGE && std::strcmp(name, "untouched") == 0,
              "of_graph_free_tensor_name");
  }
  if (in.flag()) {
    size_t length = 0;
    FZ_MUST(of_graph_dump(gs.graph, nullptr, 0, &length));
    const size_t capacity = in.flag() ? length + 1 : in.pick(64);
    std::vector<char> buffer(capacity + 1, '#');
    size_t again = 0;
    FZ_MUST(of_graph_dump(gs.graph, buffer.data(), capacity, &again));
    FZ_ASSERT(again == length, "two dumps of one graph differ in length");
    if (capacity > 0) {
      const size_t n = std::min(capacity - 1, length);
      FZ_ASSERT(buffer[n] == '\0' && std::strlen(buffer.data()) == n && buffer[capacity] == '#',
                "of_graph_dump wrote a wrong length or past its capacity");
    }
  }
  if (in.flag()) {
    of_graph_memory_stats_t stats;
    std::memset(&stats, 0, sizeof stats);
    stats.struct_size = in.struct_size(sizeof stats);
    if (stats.struct_size > sizeof stats) stats.struct_size = sizeof stats;  // the caller's buffer is this big
    FZ_CHECK(of_graph_memory_stats(gs.graph, &stats));
  }
}

// The eager inputs of one run: sizes for the declared dims (unknown: any; symbols: one size each),
// now and then a mismatch.
std::vector<of_tensor_t*> RunInputs(Harness& h, const GraphState& gs, bool* mismatch) {
  Bytes& in = h.in;
  std::vector<std::pair<int64_t, int64_t>> symbol_sizes;
  auto symbol_size = [&](int64_t sym) {
    for (auto& [s, v] : symbol_sizes) {
      if (s == sym) return in.rare(16) ? (*mismatch = true, v + 1) : v;
    }
    const int64_t v = in.pick(4);
    symbol_sizes.push_back({sym, v});
    return v;
  };
  std::vector<of_tensor_t*> tensors;
  for (const InputSpec& spec : gs.inputs) {
    std::vector<int64_t> dims;
    for (int64_t d : spec.dims) {
      if (d >= 0) {
        dims.push_back(in.rare(32) && d < kMaxNumel ? (*mismatch = true, d + 1) : d);
      } else if (of_dim_is_symbol(d)) {
        dims.push_back(symbol_size(d));
      } else {
        dims.push_back(in.pick(4));
      }
    }
    if (in.rare(32)) {
      *mismatch = true;
      dims.push_back(1);
    }
    const of_dtype_t* dtype = spec.dtype != nullptr ? spec.dtype : of_dtype_float32();
    if (in.rare(32)) {
      *mismatch = true;
      dtype = dtype == of_dtype_float32() ? of_dtype_float64() : of_dtype_float32();
    }
    Pool scratch(in);
    OpContext sc{h.session, in, scratch};
    of_tensor_t* t = Fresh(sc, dtype, dims);
    if (t == nullptr) {
      *mismatch = true;
      continue;
    }
    of_tensor_retain(t);  // keep it past the scratch pool
    tensors.push_back(t);
  }
  return tensors;
}

// One run of gs, checked: a failure leaves the out array, the parameters and the generator alone.
void Run(Harness& h, const GraphState& gs, const std::vector<of_tensor_t*>& inputs, bool mismatch) {
  Bytes& in = h.in;
  size_t n_in = inputs.size(), n_out = gs.outputs;
  if (in.rare(32)) n_in = n_in > 0 ? n_in - 1 : 1;
  if (in.rare(32)) n_out += 1;
  std::vector<const of_tensor_t*> in_array(inputs.begin(), inputs.end());
  in_array.resize(std::max(n_in, in_array.size()), nullptr);
  std::vector<of_tensor_t*> outs(n_out + 1, TensorSentinel());
  std::vector<Fingerprint> before;
  for (of_tensor_t* p : h.params) before.push_back(Take(p));
  std::vector<Fingerprint> inputs_before;
  for (of_tensor_t* t : inputs) inputs_before.push_back(Take(t));
  h.gen.Reseed(h.session, h.seed++);
  const of_status_code_t code = FZ_CHECK(of_graph_run(gs.graph, in_array.data(), n_in, outs.data(), n_out));
  FZ_ASSERT(outs[n_out] == TensorSentinel(), "of_graph_run wrote past n_out_tensors");
  for (size_t i = 0; i < inputs.size(); ++i) {
    FZ_ASSERT(Take(inputs[i]) == inputs_before[i], "of_graph_run changed an input tensor");
  }
  if (code != OF_STATUS_OK) {
    for (size_t i = 0; i < n_out; ++i) FZ_ASSERT(outs[i] == TensorSentinel(), "a failed run wrote its out tensors");
    for (size_t i = 0; i < h.params.size(); ++i) {
      FZ_ASSERT(Take(h.params[i]) == before[i], "a failed run changed a parameter");
    }
    h.gen.ExpectUntouched(h.session, "a failed of_graph_run");
    if (!gs.built) FZ_ASSERT(code == OF_STATUS_FAILED_PRECONDITION, "running an unbuilt graph");
    return;
  }
  FZ_ASSERT(gs.built, "an unbuilt graph ran");
  FZ_ASSERT(!mismatch || gs.inputs.empty(), "a run with mismatching inputs succeeded");
  for (size_t i = 0; i < n_out; ++i) {
    FZ_ASSERT(outs[i] != TensorSentinel() && outs[i] != nullptr, "a run left an output unset");
    FZ_ASSERT(Inspect(outs[i]) >= 0, "a run gave a lazy output");
    HashTensor(outs[i]);
    of_tensor_release(outs[i]);
  }
}

of_graph_t* CreateGraph(Harness& h) {
  Bytes& in = h.in;
  of_graph_options_t o;
  of_graph_options_init(&o);
  if (in.flag()) {
    o.fuse = in.flag_arg();
    o.inplace = in.flag_arg();
    o.plan_memory = in.flag_arg();
    static const int32_t kCache[] = {1, 2, 8, 1, 2, 0, -1, std::numeric_limits<int32_t>::max()};
    o.plan_cache_size = kCache[in.pick(8)];
    o.struct_size = in.struct_size(sizeof o);
  }
  static const char* const kNames[] = {"g", "train", nullptr, "", "g"};
  of_graph_t* const sentinel = reinterpret_cast<of_graph_t*>(TensorSentinel());
  of_graph_t* g = sentinel;
  of_session_t* s = in.rare(64) ? nullptr : h.session;
  const of_graph_options_t* options = in.rare(4) ? nullptr : &o;
  if (FZ_CHECK(of_graph_create(s, kNames[in.pick(5)], options, &g)) != OF_STATUS_OK) {
    FZ_ASSERT(g == sentinel, "a failed of_graph_create wrote its out parameter");
    return nullptr;
  }
  FZ_ASSERT(g != sentinel && g != nullptr, "of_graph_create succeeded without a graph");
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static GeneratorCheck* gen = new GeneratorCheck();
  Bytes in(data, size);
  FZ_MUST(of_grad_set_enabled(1, nullptr));
  of_session_t* session = NewSession(in.u8());
  Pool pool(in);
  Harness h{session, in, pool, *gen, {}, {}};

  // symbols and eager parameters
  static const char* const kSymbols[] = {"N", "M", "seq", "N"};
  for (uint32_t i = in.pick(3); i > 0; --i) {
    int64_t sym = 0;
    FZ_MUST(of_session_dim_symbol(session, kSymbols[in.pick(4)], &sym));
    h.symbols.push_back(sym);
  }
  for (uint32_t i = in.pick(3); i > 0; --i) {
    std::vector<int64_t> dims(1 + in.pick(2));
    for (int64_t& d : dims) d = 1 + in.pick(4);
    of_tensor_t* p = nullptr;
    FZ_MUST(of_tensor_randn(session, in.rare(4) ? of_dtype_float64() : of_dtype_float32(), dims.data(), dims.size(),
                            nullptr, &p));
    if (in.pick(4) != 0) FZ_MUST(of_tensor_set_requires_grad(p, 1));
    h.params.push_back(p);
    of_tensor_retain(p);
    pool.add(p);
  }

  GraphState g1, g2;
  g1.graph = CreateGraph(h);
  if (in.rare(4)) g2.graph = CreateGraph(h);
  if (g1.graph != nullptr) {
    Build(h, g1, kMaxOps);
    Queries(h, g1);
  }
  // a second graph: built after the first (its ops meet g1's lazy tensors), or never built
  if (g2.graph != nullptr && in.flag()) {
    Build(h, g2, kMaxOps / 4);
    Queries(h, g2);
  }
  // lazy tensors outside their build: the op layer meets them in eager mode now
  for (int i = in.pick(3); i > 0; --i) {
    pool.flush();
    OpContext c{session, in, pool};
    Keep(pool, h.run(PrepareOp(c)));
  }
  // runs
  std::vector<of_tensor_t*> last_inputs;
  bool last_mismatch = false;
  for (GraphState* gs : {&g1, &g2}) {
    if (gs->graph == nullptr) continue;
    const uint32_t runs = in.pick(kMaxRuns + 1);
    for (uint32_t r = 0; r < runs; ++r) {
      bool mismatch = false;
      std::vector<of_tensor_t*> inputs = RunInputs(h, *gs, &mismatch);
      Run(h, *gs, inputs, mismatch);
      if (in.flag()) Queries(h, *gs);
      for (of_tensor_t* t : last_inputs) of_tensor_release(t);
      last_inputs = std::move(inputs);
      last_mismatch = mismatch;
    }
  }
  FZ_ASSERT(FZ_CHECK(of_graph_run(nullptr, nullptr, 0, nullptr, 0)) == OF_STATUS_INVALID_ARGUMENT, "a NULL graph");

  // destroy in an order chosen by the bytes; g1 may run once more on the way
  enum Item { kSession, kGraph1, kGraph2, kOptimizer, kTensors, kRun, kCount };
  int order[kCount] = {kSession, kGraph1, kGraph2, kOptimizer, kTensors, kRun};
  for (int i = kCount - 1; i > 0; --i) std::swap(order[i], order[in.pick(static_cast<uint32_t>(i + 1))]);
  for (int item : order) {
    switch (item) {
      case kSession: of_session_destroy(session); h.session = nullptr; break;
      case kGraph1: of_graph_destroy(g1.graph); g1.graph = nullptr; break;
      case kGraph2: of_graph_destroy(g2.graph); g2.graph = nullptr; break;
      case kOptimizer: of_optimizer_destroy(h.optimizer); h.optimizer = nullptr; break;
      case kTensors:
        pool.clear();
        for (of_tensor_t* p : h.params) of_tensor_release(p);
        h.params.clear();
        break;
      default:
        if (g1.graph != nullptr && (g1.inputs.size() == last_inputs.size() || !g1.built)) {
          std::vector<of_tensor_t*> outs(g1.outputs, TensorSentinel());
          std::vector<const of_tensor_t*> ins(last_inputs.begin(), last_inputs.end());
          const of_status_code_t code = FZ_CHECK(of_graph_run(g1.graph, ins.data(), ins.size(), outs.data(), outs.size()));
          for (of_tensor_t* t : outs) {
            if (code == OF_STATUS_OK) {
              Inspect(t);
              of_tensor_release(t);
            } else {
              FZ_ASSERT(t == TensorSentinel(), "a failed run wrote its out tensors");
            }
          }
          (void)last_mismatch;
        }
        break;
    }
  }
  for (of_tensor_t* t : last_inputs) of_tensor_release(t);
  FZ_MUST(of_grad_set_enabled(1, nullptr));
  return 0;
}
