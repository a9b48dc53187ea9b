#include <algorithm>
#include <map>
#include <utility>

#include "core/dist/process_group.h"
#include "core/graph/passes/passes.h"

namespace oneflow::graph {
namespace {

// A new value written by a new node; returns the value's id.
int32_t AddValue(Ir& ir, const TensorMeta& meta) {
  ir.metas.push_back(meta);
  ir.is_output.push_back(false);
  return static_cast<int32_t>(ir.metas.size() - 1);
}

// A node of `op_name` with every attribute given, its output metas inferred; appended to `nodes`.
int32_t AddNode(Ir& ir, std::vector<IrNode>& nodes, std::string_view op_name, std::vector<int32_t> inputs, Attrs attrs) {
  const OpDef& op = OpRegistry::Global().Get(op_name);
  IrNode n{.op = &op, .attrs = std::move(attrs), .inputs = std::move(inputs), .origin = "data parallel"};
  const std::vector<TensorMeta> out = op.infer(ir.InputMetas(n), n.attrs);
  n.outputs = {AddValue(ir, out[0])};
  nodes.push_back(std::move(n));
  return nodes.back().outputs[0];
}

struct Gradient {
  int32_t value;                                   // the gradient an update reads
  int32_t producer;                                // the node that writes it
  std::vector<std::pair<size_t, size_t>> readers;  // (node, input) of every read: updates, the loss scaler's check
};

}  // namespace

// Note [Gradient buckets]
// As PyTorch's DistributedDataParallel: the gradients, in the order the backward produces them, are
// grouped into buckets of about `bucket_bytes` (one dtype each). Right after the node that produces a
// bucket's last gradient, the bucket is flattened into one buffer whose all_reduce (mean) starts on the
// process group's thread (all_reduce_start), so that it travels while the rest of the backward runs; just
// before the first update that reads one of its gradients, all_reduce_wait waits for it and the
// buffer's slices are viewed back in the gradients' shapes for the updates (and every other reader of a
// gradient: the loss scaler's check, Note [Loss scaling]). Every rank compiles the same
// program, hence the same buckets in the same order (the graph checks that once per plan).
void AllReduceGradients(Ir& ir, int64_t group, size_t bucket_bytes) {
  const std::vector<int32_t> producer = ir.Producers();
  std::map<int32_t, Gradient> by_value;
  for (size_t k = 0; k < ir.nodes.size(); ++k) {
    const IrNode& n = ir.nodes[k];
    if (!n.alive || n.update < 0 || n.op->gradient_input < 0) continue;
    const int32_t g = n.inputs[static_cast<size_t>(n.op->gradient_input)];
    const int32_t p = producer[static_cast<size_t>(g)];
    OF_CHECK_INTERNAL(p >= 0) << "an update's gradient has no producer";
    by_value.try_emplace(g, Gradient{g, p, {}});
  }
  for (size_t k = 0; k < ir.nodes.size(); ++k) {
    const IrNode& n = ir.nodes[k];
    if (!n.alive) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const auto it = by_value.find(n.inputs[i]);
      if (it != by_value.end()) it->second.readers.emplace_back(k, i);
    }
  }
  std::vector<Gradient> grads;
  for (auto& [v, grad] : by_value) grads.push_back(std::move(grad));
  std::stable_sort(grads.begin(), grads.end(), [](const Gradient& a, const Gradient& b) { return a.producer < b.producer; });

  // Buckets: consecutive gradients of one dtype up to bucket_bytes (at least one each).
  std::vector<std::vector<Gradient>> buckets;
  size_t bytes = 0;
  for (Gradient& grad : grads) {
    const TensorMeta& m = ir.meta(grad.value);
    const size_t size = static_cast<size_t>(m.shape.numel()) * m.dtype->bytes();
    if (buckets.empty() || ir.meta(buckets.back()[0].value).dtype != m.dtype || bytes + size > bucket_bytes) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(std::move(grad));
    bytes += size;
  }

  // Each bucket's nodes: the start after its last producer, the wait and the views before its first reader.
  struct Insertion {
    size_t at;   // insert before node `at` (an index before any insertion)
    int order;   // at one position, starts (0) go before waits (1)
    std::vector<IrNode> nodes;
  };
  std::vector<Insertion> insertions;
  const Attrs group_attr{{"group", group}};
  for (const std::vector<Gradient>& bucket : buckets) {
    std::vector<IrNode> start, finish;
    std::vector<int32_t> flat;
    for (const Gradient& g : bucket) {
      flat.push_back(AddNode(ir, start, "flatten", {g.value}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{-1}}}));
    }
    const int32_t joined = flat.size() == 1 ? flat[0] : AddNode(ir, start, "cat", flat, {{"dim", int64_t{0}}});
    const int32_t averaged = AddNode(ir, start, "all_reduce_start", {joined},
                                     {{"group", group}, {"op", static_cast<int64_t>(dist::ReduceOp::kMean)}});
    AddNode(ir, finish, "all_reduce_wait", {averaged}, group_attr);
    int64_t offset = 0;
    size_t last_producer = 0, first_reader = ir.nodes.size();
    for (const Gradient& g : bucket) {
      const Shape& shape = ir.meta(g.value).shape;
      const int64_t numel = shape.numel();
      const int32_t slice = AddNode(ir, finish, "narrow", {averaged},
                                    {{"dim", int64_t{0}}, {"start", offset}, {"length", numel}});
      const int32_t shaped = AddNode(ir, finish, "view", {slice},
                                     {{"shape", std::vector<int64_t>(shape.raw().begin(), shape.raw().end())}});
      offset += numel;
      for (const auto& [k, i] : g.readers) {
        ir.nodes[k].inputs[i] = shaped;
        first_reader = std::min(first_reader, k);
      }
      last_producer = std::max(last_producer, static_cast<size_t>(g.producer));
    }
    insertions.push_back({last_producer + 1, 0, std::move(start)});
    insertions.push_back({first_reader, 1, std::move(finish)});
  }
  // From the last position to the first, so that the positions still to come stay valid; at one
  // position, what must come later is inserted first.
  std::stable_sort(insertions.begin(), insertions.end(), [](const Insertion& a, const Insertion& b) {
    return a.at != b.at ? a.at > b.at : a.order > b.order;
  });
  for (Insertion& ins : insertions) {
    ir.nodes.insert(ir.nodes.begin() + static_cast<std::ptrdiff_t>(ins.at), std::make_move_iterator(ins.nodes.begin()),
                    std::make_move_iterator(ins.nodes.end()));
  }
}

}  // namespace oneflow::graph
