// The C ABI of lazy graphs (core/graph/graph.h).
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "capi/src/capi_internal.h"
#include "core/graph/graph.h"
#include "core/train/optimizer.h"

using namespace oneflow;
using capi::Borrow;
using capi::BorrowList;
using capi::Flag;
using capi::Guard;
using capi::ReadOptions;
using capi::Require;
using capi::Unwrap;
using capi::Wrap;

struct of_graph_t {
  std::unique_ptr<graph::Graph> impl;
  std::mutex names_mutex;
  std::deque<std::string> free_names;  // append-only: returned name pointers stay valid
};

graph::Graph& capi::GraphOf(const of_graph_t* graph) { return *Require(graph, "graph")->impl; }

namespace {

// Runs fn with the graph's session current on this thread (so that its build intercepts the ops).
template <typename Fn>
of_status_t* WithGraph(const char* function, const of_graph_t* g, Fn&& fn) {
  return Guard(function, [&] {
    graph::Graph& graph = capi::GraphOf(g);
    SessionScope scope(graph.session());
    fn(graph);
  });
}

std::string NameArg(const char* name, std::string_view arg) {
  Require(name, arg);
  OF_CHECK(name[0] != '\0') << "argument '" << arg << "' is empty";
  return name;
}

}  // namespace

extern "C" {

void of_graph_options_init(of_graph_options_t* options) {
  if (options == nullptr) return;
  const graph::GraphOptions d;
  *options = of_graph_options_t{
      sizeof(of_graph_options_t), d.fuse, d.inplace, d.plan_memory, static_cast<int32_t>(d.plan_cache_size), d.profile};
}

of_status_t* of_graph_create(of_session_t* session, const char* name, const of_graph_options_t* options,
                             of_graph_t** out_graph) {
  return Guard(__func__, [&] {
    capi::SessionOf(session);
    Require(out_graph, "out_graph");
    const of_graph_options_t o = ReadOptions(options, of_graph_options_init, "options");
    const graph::GraphOptions go{.fuse = Flag(o.fuse, "options->fuse"),
                                 .inplace = Flag(o.inplace, "options->inplace"),
                                 .plan_memory = Flag(o.plan_memory, "options->plan_memory"),
                                 .plan_cache_size = static_cast<size_t>(o.plan_cache_size),
                                 .profile = Flag(o.profile, "options->profile")};
    OF_CHECK(o.plan_cache_size >= 1) << "options->plan_cache_size must be at least 1, got " << o.plan_cache_size;
    auto g = std::make_unique<of_graph_t>();
    g->impl = std::make_unique<graph::Graph>(session->impl, name != nullptr ? name : "", go);
    *out_graph = g.release();
  });
}

void of_graph_destroy(of_graph_t* graph) { delete graph; }

of_status_t* of_graph_begin_build(of_graph_t* graph) {
  return WithGraph(__func__, graph, [&](graph::Graph& g) { g.BeginBuild(); });
}

of_status_t* of_graph_add_input(of_graph_t* graph, const char* name, const of_dtype_t* dtype, const int64_t* dims,
                                size_t ndim, of_tensor_t** out_tensor) {
  return WithGraph(__func__, graph, [&](graph::Graph& g) {
    std::string n = NameArg(name, "name");
    const Symbol<DType> dt = Unwrap(dtype);
    if (ndim > 0) Require(dims, "dims");
    Shape shape = Shape::FromRaw(dims, ndim, "dims");
    Require(out_tensor, "out_tensor");
    *out_tensor = Wrap(g.AddInput(std::move(n), dt, std::move(shape)));
  });
}

of_status_t* of_graph_add_parameter(of_graph_t* graph, of_tensor_t* tensor, const char* name) {
  return WithGraph(__func__, graph, [&](graph::Graph& g) {
    TensorPtr t = Borrow(tensor, "tensor");
    g.AddParameter(t, NameArg(name, "name"));
  });
}

of_status_t* of_graph_add_output(of_graph_t* graph, const of_tensor_t* tensor) {
  return WithGraph(__func__, graph, [&](graph::Graph& g) { g.AddOutput(Borrow(tensor, "tensor")); });
}

of_status_t* of_graph_add_optimizer(of_graph_t* graph, of_optimizer_t* optimizer) {
  return WithGraph(__func__, graph,
                   [&](graph::Graph& g) { g.AddOptimizer(Require(optimizer, "optimizer")->impl); });
}

of_status_t* of_graph_end_build(of_graph_t* graph) {
  return WithGraph(__func__, graph, [&](graph::Graph& g) { g.EndBuild(); });
}

of_status_t* of_graph_run(of_graph_t* graph, const of_tensor_t* const* inputs, size_t n_inputs,
                          of_tensor_t** out_tensors, size_t n_out_tensors) {
  return WithGraph(__func__, graph, [&](graph::Graph& g) {
    g.CheckRunnable();  // before the arguments: the header promises FAILED_PRECONDITION for an unbuilt graph
    const std::vector<TensorPtr> in = BorrowList(inputs, n_inputs, "inputs");
    const size_t declared = g.program().outputs.size();
    OF_CHECK(n_out_tensors == declared) << "n_out_tensors is " << n_out_tensors << " but graph '" << g.name()
                                        << "' has " << declared << " output(s)";
    if (n_out_tensors > 0) Require(out_tensors, "out_tensors");
    std::vector<TensorPtr> out = g.Run(in);
    for (size_t i = 0; i < out.size(); ++i) out_tensors[i] = Wrap(std::move(out[i]));
  });
}

of_status_t* of_graph_input_count(const of_graph_t* graph, size_t* out_count) {
  return Guard(__func__, [&] { *Require(out_count, "out_count") = capi::GraphOf(graph).program().inputs.size(); });
}

of_status_t* of_graph_output_count(const of_graph_t* graph, size_t* out_count) {
  return Guard(__func__, [&] { *Require(out_count, "out_count") = capi::GraphOf(graph).program().outputs.size(); });
}

of_status_t* of_graph_free_tensor_count(const of_graph_t* graph, size_t* out_count) {
  return Guard(__func__, [&] { *Require(out_count, "out_count") = capi::GraphOf(graph).num_free_tensors(); });
}

of_status_t* of_graph_free_tensor_name(const of_graph_t* graph, size_t index, const char** out_name) {
  return Guard(__func__, [&] {
    const std::vector<std::string> names = capi::GraphOf(graph).free_tensor_names();
    Require(out_name, "out_name");
    if (index >= names.size()) {
      OF_THROW(OutOfRange) << "index " << index << " is past the graph's " << names.size() << " free tensors";
    }
    auto* g = const_cast<of_graph_t*>(graph);
    std::lock_guard<std::mutex> lock(g->names_mutex);
    while (g->free_names.size() < names.size()) g->free_names.push_back(names[g->free_names.size()]);
    *out_name = g->free_names[index].c_str();
  });
}

of_status_t* of_graph_dump(const of_graph_t* graph, char* out_buffer, size_t capacity, size_t* out_length) {
  return Guard(__func__, [&] {
    const std::string text = capi::GraphOf(graph).Dump();
    Require(out_length, "out_length");
    if (capacity > 0) {
      Require(out_buffer, "out_buffer");
      const size_t n = std::min(capacity - 1, text.size());
      std::memcpy(out_buffer, text.data(), n);
      out_buffer[n] = '\0';
    }
    *out_length = text.size();
  });
}

of_status_t* of_graph_memory_stats(const of_graph_t* graph, of_graph_memory_stats_t* out_stats) {
  return Guard(__func__, [&] {
    const graph::MemoryStats s = capi::GraphOf(graph).memory_stats();
    capi::WriteStats(out_stats,
                     of_graph_memory_stats_t{sizeof(of_graph_memory_stats_t), s.planned_peak_bytes,
                                             s.intermediate_bytes, s.buffer_count, s.inplace_count, s.node_count,
                                             s.specialization_count, s.compile_count, s.cached_plan_bytes},
                     "out_stats");
  });
}

}  // extern "C"
