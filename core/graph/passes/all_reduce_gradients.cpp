#include <algorithm>
#include <map>

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
  int32_t value;         // the gradient an update reads
  int32_t producer;      // the node that writes it
  std::vector<size_t> readers;  // the update nodes reading it
};

}  // namespace

// Note [Gradient buckets]
// As PyTorch's DistributedDataParallel: the gradients, in the order the backward produces them, are
// grouped into buckets of about `bucket_bytes` (one dtype each); a bucket is flattened into one buffer,
// averaged over the ranks with one all_reduce, and its slices viewed back in the gradients' shapes, right
// after the node that produces the bucket's last gradient, so that the updates read averaged gradients.
// Every rank compiles the same program, hence the same buckets (the graph checks that once per plan).
void AllReduceGradients(Ir& ir, int64_t group, size_t bucket_bytes) {
  const std::vector<int32_t> producer = ir.Producers();
  std::map<int32_t, Gradient> by_value;
  for (size_t k = 0; k < ir.nodes.size(); ++k) {
    const IrNode& n = ir.nodes[k];
    if (!n.alive || n.update < 0 || n.op->gradient_input < 0) continue;
    const int32_t g = n.inputs[static_cast<size_t>(n.op->gradient_input)];
    const int32_t p = producer[static_cast<size_t>(g)];
    OF_CHECK_INTERNAL(p >= 0) << "an update's gradient has no producer";
    Gradient& grad = by_value.try_emplace(g, Gradient{g, p, {}}).first->second;
    grad.readers.push_back(k);
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

  // The new nodes of each bucket, inserted after its last producer (from the last bucket to the first, so
  // that earlier positions stay valid).
  std::vector<std::pair<size_t, std::vector<IrNode>>> insertions;
  for (const std::vector<Gradient>& bucket : buckets) {
    std::vector<IrNode> nodes;
    std::vector<int32_t> flat;
    for (const Gradient& g : bucket) {
      flat.push_back(AddNode(ir, nodes, "flatten", {g.value}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{-1}}}));
    }
    const int32_t joined = flat.size() == 1 ? flat[0] : AddNode(ir, nodes, "cat", flat, {{"dim", int64_t{0}}});
    const int32_t averaged =
        AddNode(ir, nodes, "all_reduce", {joined},
                {{"group", group}, {"op", static_cast<int64_t>(dist::ReduceOp::kMean)}, {"checked", false}});
    int64_t offset = 0;
    for (const Gradient& g : bucket) {
      const Shape& shape = ir.meta(g.value).shape;
      const int64_t numel = shape.numel();
      const int32_t slice = AddNode(ir, nodes, "narrow", {averaged},
                                    {{"dim", int64_t{0}}, {"start", offset}, {"length", numel}});
      const int32_t shaped = AddNode(ir, nodes, "view", {slice}, {{"shape", std::vector<int64_t>(shape.raw().begin(), shape.raw().end())}});
      offset += numel;
      for (size_t k : g.readers) {
        IrNode& update = ir.nodes[k];
        update.inputs[static_cast<size_t>(update.op->gradient_input)] = shaped;
      }
    }
    size_t last = 0;
    for (const Gradient& g : bucket) last = std::max(last, static_cast<size_t>(g.producer));
    insertions.emplace_back(last + 1, std::move(nodes));
  }
  std::stable_sort(insertions.begin(), insertions.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [at, nodes] : insertions) {
    ir.nodes.insert(ir.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::make_move_iterator(nodes.begin()),
                    std::make_move_iterator(nodes.end()));
  }
}

}  // namespace oneflow::graph
