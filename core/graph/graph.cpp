#include "core/graph/graph.h"

#include <algorithm>
#include <map>
#include <thread>

#include "core/autograd/autograd.h"
#include "core/graph/builder.h"
#include "core/dist/process_group.h"
#include "core/graph/compile.h"
#include "core/tensor/factory.h"
#include "core/train/optimizer.h"

namespace oneflow::graph {

Graph::Graph(std::shared_ptr<Session> session, std::string name, GraphOptions options)
    : session_(std::move(session)), id_(Session::NextId()), name_(std::move(name)), options_(options) {
  OF_CHECK_INTERNAL(session_ != nullptr) << "a graph needs a session";
  OF_CHECK(options_.plan_cache_size >= 1) << "plan_cache_size must be at least 1";
  if (name_.empty()) name_ = "graph_" + std::to_string(id_);
  RegisterGraphName(id_, name_);
}

Graph::~Graph() {
  if (builder_) {
    UninstallBuilder(builder_.get());  // on the building thread; elsewhere Orphan() deactivates it
    builder_->Orphan();
  }
  {
    std::lock_guard<std::mutex> lock(run_mutex_);
    cache_.clear();  // the executables' bound tensors go before the store releases its own references
  }
  session_->free_tensors().RemoveGraph(id_);
  RegisterGraphName(id_, "");
}

void Graph::CheckBuilding(const char* what) const {
  if (state_ != State::kBuilding) {
    OF_THROW(FailedPrecondition) << what << ": graph " << Quote(name_) << " is "
                                 << (state_ == State::kBuilt ? "already built" : "not being built")
                                 << " (begin_build ... end_build is the one build of a graph)";
  }
  if (builder_->thread() != std::this_thread::get_id()) {
    OF_THROW(FailedPrecondition) << what << ": graph " << Quote(name_)
                                 << " is being built on another thread; a build stays on the thread that began it";
  }
}

void Graph::BeginBuild() {
  if (state_ != State::kEmpty) {
    OF_THROW(FailedPrecondition) << "graph " << Quote(name_) << " is "
                                 << (state_ == State::kBuilt ? "already built" : "already being built")
                                 << "; a graph is built once (create a new graph for another program)";
  }
  if (InstalledBuilder() != nullptr) {
    OF_THROW(FailedPrecondition) << "another graph is being built on this thread (maybe in another session); end "
                                    "its build first";
  }
  builder_ = std::make_shared<GraphBuilder>(*this);
  InstallBuilder(builder_);
  state_ = State::kBuilding;
}

TensorPtr Graph::AddInput(std::string name, Symbol<DType> dtype, Shape shape) {
  CheckBuilding("add_input");
  OF_CHECK(!name.empty()) << "an input needs a name";
  for (int64_t i = 0; i < shape.ndim(); ++i) {
    const uint64_t owner = shape[i].symbol_owner();
    OF_CHECK(owner == 0 || owner == session_->id())
        << "input " << Quote(name) << ": dims[" << i << "] is the symbol '" << shape[i] << "' of session " << owner
        << ", but graph " << Quote(name_) << " belongs to session " << session_->id()
        << "; use of_session_dim_symbol of the graph's session";
  }
  for (int32_t v : program_.inputs) {
    OF_CHECK(program_.values[static_cast<size_t>(v)].name != name)
        << "graph " << Quote(name_) << " already has an input named " << Quote(name);
  }
  shape.numel_dim();  // OutOfRange for sizes that overflow, before anything is recorded
  const auto v = static_cast<int32_t>(program_.values.size());
  program_.values.push_back(Value{.meta = TensorMeta{dtype, std::move(shape), session_->default_device()},
                                  .kind = ValueKind::kInput,
                                  .name = std::move(name)});
  program_.inputs.push_back(v);
  return builder_->LazyTensor(v);
}

void Graph::AddParameter(const TensorPtr& tensor, std::string name) {
  CheckBuilding("add_parameter");
  OF_CHECK(tensor) << "the parameter is null";
  OF_CHECK(!tensor->is_lazy()) << "parameter " << Quote(name) << " is a lazy tensor; parameters are eager tensors";
  OF_CHECK(!name.empty()) << "a parameter needs a name";
  OF_CHECK(tensor->dtype()->is_floating_point() && tensor->is_leaf())
      << "parameter " << Quote(name) << " must be a floating-point leaf tensor, got " << tensor->dtype()
      << (tensor->is_leaf() ? "" : " computed by an op");
  builder_->VariableFor(tensor, name);
  // A registered parameter is trainable: backward must trace its gradient (as for an nn.Parameter).
  tensor->set_requires_grad(true);
}

void Graph::AddOutput(const TensorPtr& tensor) {
  CheckBuilding("add_output");
  OF_CHECK(tensor) << "the output is null";
  OF_CHECK(tensor->is_lazy() && tensor->lazy_graph() == id_)
      << "an output must be a lazy tensor of graph " << Quote(name_) << " (a result of ops in this build), got "
      << (tensor->is_lazy() ? "a lazy tensor of another graph" : "an eager tensor");
  program_.outputs.push_back(tensor->lazy_value());
}

void Graph::AddOptimizer(std::shared_ptr<Optimizer> optimizer) {
  CheckBuilding("add_optimizer");
  OF_CHECK(optimizer) << "the optimizer is null";
  for (const Update& u : updates_) {
    OF_CHECK(u.optimizer != optimizer) << "this optimizer is already attached to graph " << Quote(name_);
  }
  NoGradGuard no_grad;
  std::vector<size_t> stepped;  // the parameters that received a gradient in this build
  std::vector<TensorPtr> grads;
  for (size_t i = 0; i < optimizer->params().size(); ++i) {
    if (TensorPtr grad = builder_->LeafGrad(optimizer->params()[i].get())) {
      stepped.push_back(i);
      grads.push_back(std::move(grad));
    }
  }
  if (stepped.empty()) {
    OF_THROW(FailedPrecondition) << "none of the optimizer's " << optimizer->params().size()
                                 << " parameters received a gradient in this build; call backward on the loss (a "
                                    "lazy tensor of this graph) before attaching the optimizer";
  }
  optimizer->TraceStepBegin(grads);
  for (size_t k = 0; k < stepped.size(); ++k) {
    const size_t before = program_.nodes.size();
    optimizer->TraceUpdate(stepped[k], grads[k]);
    OF_CHECK_INTERNAL(program_.nodes.size() == before + 1) << "an update traced " << program_.nodes.size() - before
                                                           << " nodes";
    updates_.push_back(Update{before, optimizer, stepped[k]});
  }
  optimizer->TraceStepEnd();
}

void Graph::EndBuild() {
  CheckBuilding("end_build");
  if (program_.outputs.empty() && updates_.empty()) {
    OF_THROW(FailedPrecondition) << "graph " << Quote(name_) << " has no outputs and no optimizer: declare an output "
                                    "(add_output) or attach an optimizer before ending the build";
  }
  InstallBuilder(nullptr);
  builder_->Orphan();
  builder_.reset();
  state_ = State::kBuilt;
}

// Note [Data-parallel graphs]
// A data-parallel graph is the same traced training step on every rank of a process group, each rank
// feeding its own inputs (its share of the global batch). Compiling it adds the averaging of the
// gradients over the ranks before the optimizer's updates (passes/all_reduce_gradients.cpp), so that
// every rank applies the same update and the parameters stay equal without being sent again. The first
// run broadcasts rank 0's parameters and batch-norm running statistics, so that the ranks start equal;
// batch norm normalises with each rank's own batch statistics (as DistributedDataParallel), and with
// sync_batch_norm_stats each step ends by averaging the running statistics (all of them packed into one
// all_reduce: they are small, so the collective's latency is what costs, and 18 separate ones took 29 ms
// a step, more than the step itself, for the Fashion-MNIST example on 2 ranks). Each compiled plan is checked
// once to be the same program on every rank (its ops, input shapes and variables); a rank that differs
// is named, since otherwise the ranks would wait for collectives that never come.
void Graph::SetDataParallel(DataParallel dp) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  OF_CHECK(dp.group) << "the process group is null";
  OF_CHECK(dp.bucket_bytes > 0) << "bucket_bytes must be > 0";
  if (has_run_) {
    OF_THROW(FailedPrecondition) << "graph " << Quote(name_)
                                 << " has already run; make it data-parallel before its first run";
  }
  if (state_ == State::kBuilt && updates_.empty()) {
    OF_THROW(FailedPrecondition) << "graph " << Quote(name_)
                                 << " has no optimizer: data parallelism averages the gradients a training step's "
                                    "updates read (attach an optimizer in the build)";
  }
  data_parallel_ = std::make_unique<DataParallel>(std::move(dp));
}

std::vector<size_t> Graph::RunningStatIndices() const {
  std::vector<size_t> indices;
  for (const Node& n : program_.nodes) {
    if (!n.op->batch_norm || !n.attrs.Bool("training")) continue;
    for (size_t i : {size_t{3}, size_t{4}}) {
      const int32_t v = n.inputs[i];
      if (v < 0) continue;
      const auto it = std::find(program_.variables.begin(), program_.variables.end(), v);
      if (it != program_.variables.end()) indices.push_back(static_cast<size_t>(it - program_.variables.begin()));
    }
  }
  return indices;
}

void Graph::StartDataParallel(const std::vector<TensorPtr>& variables) {
  dist::ProcessGroup& group = *data_parallel_->group;
  std::vector<size_t> shared = RunningStatIndices();
  for (size_t i = 0; i < program_.variables.size(); ++i) {
    if (program_.values[static_cast<size_t>(program_.variables[i])].trainable) shared.push_back(i);
  }
  std::sort(shared.begin(), shared.end());
  shared.erase(std::unique(shared.begin(), shared.end()), shared.end());
  for (size_t i : shared) {
    const TensorPtr& t = variables[i];
    CheckWritable(*t, "variable '" + program_.values[static_cast<size_t>(program_.variables[i])].name + "'");
    group.Broadcast(*t, 0);  // checked: the ranks must hold the same parameters
    t->MarkWritten();
  }
}

void Graph::AverageRunningStats(const std::vector<TensorPtr>& variables) {
  std::map<DataType, std::vector<Tensor*>> by_dtype;  // one all_reduce per dtype
  for (size_t i : RunningStatIndices()) by_dtype[variables[i]->dtype()->data_type()].push_back(variables[i].get());
  for (const auto& [type, stats] : by_dtype) {
    const Device device = stats[0]->device();
    Backend& backend = GetBackend(device);
    int64_t count = 0;
    for (const Tensor* t : stats) {
      OF_CHECK_INTERNAL(t->is_contiguous() && t->device() == device) << "running statistics must be dense, one device";
      count += t->numel();
    }
    const TensorPtr packed = Empty(DType::Get(type), Shape{count}, device);
    char* at = static_cast<char*>(packed->raw_data());
    for (const Tensor* t : stats) {
      backend.Copy(at, t->raw_data(), t->nbytes());
      at += t->nbytes();
    }
    data_parallel_->group->AllReduce(*packed, dist::ReduceOp::kMean, /*checked=*/false);
    at = static_cast<char*>(packed->raw_data());
    for (Tensor* t : stats) {
      backend.Copy(t->raw_data(), at, t->nbytes());
      at += t->nbytes();
      t->MarkWritten();
    }
  }
}

void Graph::CheckRunnable() const {
  if (state_ != State::kBuilt) {
    OF_THROW(FailedPrecondition) << "graph " << Quote(name_) << " "
                                 << (state_ == State::kEmpty ? "was never built" : "is still being built")
                                 << ": build it (begin_build, ops, end_build) before running it";
  }
}

std::vector<TensorPtr> Graph::Run(const std::vector<TensorPtr>& inputs) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  CheckRunnable();
  OF_CHECK(inputs.size() == program_.inputs.size())
      << "graph " << Quote(name_) << " takes " << program_.inputs.size() << " input(s), got " << inputs.size();
  ShapeBinding binding;
  std::vector<int64_t> key;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& declared = program_.values[static_cast<size_t>(program_.inputs[i])];
    const std::string what = "input '" + declared.name + "'";
    OF_CHECK(inputs[i]) << what << " is null";
    const Tensor& t = *inputs[i];
    OF_CHECK(!t.is_lazy()) << what << " is a lazy tensor; a graph runs on eager tensors";
    OF_CHECK(t.dtype() == declared.meta.dtype) << what << " must be " << declared.meta.dtype << ", got " << t.dtype();
    OF_CHECK(t.device() == declared.meta.device) << what << " must be on " << declared.meta.device << ", got "
                                                 << t.device();
    binding.Bind(declared.meta.shape, t.shape(), what);
    key.push_back(t.ndim());
    for (Dim d : t.shape()) key.push_back(d.value());
    shapes.push_back(t.shape());
  }
  // The variables are the session's, bound for this run only.
  const std::vector<TensorPtr> variables = session_->free_tensors().Tensors(id_);
  if (data_parallel_ && !has_run_) StartDataParallel(variables);
  has_run_ = true;
  Executable& exe = PlanFor(key, shapes, variables);
  for (Executable::Step& step : exe.steps) {
    if (step.update < 0) continue;
    const Update& u = updates_[static_cast<size_t>(step.update)];
    u.optimizer->RefreshTracedAttrs(u.param_index, step.attrs);
  }
  std::vector<TensorPtr> outputs;
  try {
    outputs = Execute(exe, inputs, variables, *session_);
  } catch (...) {
    // A step that failed half-way must not leave gradients travelling into the plan's buffers.
    if (data_parallel_) data_parallel_->group->WaitForAll();
    throw;
  }
  for (const Update& u : updates_) u.optimizer->TracedStepDone(u.param_index);
  if (data_parallel_ && data_parallel_->sync_batch_norm_stats) AverageRunningStats(variables);
  last_stats_ = exe.stats;
  last_stats_.specialization_count = cache_.size();
  last_stats_.compile_count = compile_count_;
  for (const auto& [k, plan] : cache_) last_stats_.cached_plan_bytes += plan.exe->stats.planned_peak_bytes;
  return outputs;
}

namespace {
// What must agree between the ranks of a data-parallel graph: the ops in order, the concrete input dims
// and the variables' dtypes and shapes (FNV-1a).
uint64_t ProgramSignatureOf(const Program& p, const std::vector<int64_t>& input_key, const std::vector<TensorPtr>& variables) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t v) {
    for (int k = 0; k < 8; ++k) h = (h ^ ((v >> (8 * k)) & 0xff)) * 0x100000001b3ull;
  };
  for (const Node& n : p.nodes) {
    for (char c : n.op->name) mix(static_cast<uint8_t>(c));
    mix(n.inputs.size());
  }
  for (int64_t d : input_key) mix(static_cast<uint64_t>(d));
  for (const TensorPtr& v : variables) {
    mix(static_cast<uint64_t>(v->dtype()->code()));
    for (Dim d : v->shape()) mix(static_cast<uint64_t>(d.value()));
  }
  return h;
}
}  // namespace

uint64_t Graph::ProgramSignature(const std::vector<int64_t>& key, const std::vector<TensorPtr>& variables) const {
  return ProgramSignatureOf(program_, key, variables);
}

Executable& Graph::PlanFor(const std::vector<int64_t>& key, const std::vector<Shape>& shapes,
                           const std::vector<TensorPtr>& variables) {
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    std::vector<size_t> update_nodes;
    for (const Update& u : updates_) update_nodes.push_back(u.node);
    std::unique_ptr<Executable> exe = Compile(program_, shapes, variables, options_, update_nodes, data_parallel_.get());
    ++compile_count_;
    if (data_parallel_) {  // Note [Data-parallel graphs]: every rank runs the same plan
      data_parallel_->group->CheckSame(ProgramSignature(key, variables),
                                       fmt::format("graph {}'s program (its ops, input shapes and variables)", Quote(name_)));
    }
    if (cache_.size() >= options_.plan_cache_size) {
      auto lru = std::min_element(cache_.begin(), cache_.end(),
                                  [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
      std::erase(specialization_order_, lru->second.exe.get());
      cache_.erase(lru);
    }
    it = cache_.emplace(key, CachedPlan{std::move(exe)}).first;
    specialization_order_.push_back(it->second.exe.get());
  }
  it->second.last_used = ++run_clock_;
  return *it->second.exe;
}

MemoryStats Graph::memory_stats() const {
  std::lock_guard<std::mutex> lock(run_mutex_);
  return last_stats_;
}

namespace {
std::string Ref(int32_t v) { return v < 0 ? std::string("none") : "%" + std::to_string(v); }
std::string MetaString(const TensorMeta& m) { return fmt::format("{} {}", m.dtype->name(), m.shape); }
}  // namespace

// The format (one item per line):
//   graph "<name>" (<state>): <n> inputs, <n> variables (<n> trainable, <n> free), <n> nodes, <n> outputs
//   input %<v> <name>: <dtype> <shape>                      shapes print unknown dims as ? and symbols by name
//   variable %<v> <name>: <dtype> <shape> trainable|non-trainable
//   node #<i>: %<v>[, %<v>] = <op>(%<v>, ..., none) {attrs} : <dtype> <shape>[, ...]
//   output %<v>
// then, per compiled specialization, DumpExecutable's text.
std::string Graph::Dump() const {
  std::lock_guard<std::mutex> lock(run_mutex_);
  const Program& p = program_;
  size_t trainable = 0;
  for (int32_t v : p.variables) trainable += p.values[static_cast<size_t>(v)].trainable ? 1 : 0;
  const char* state = state_ == State::kBuilt ? "built" : state_ == State::kBuilding ? "building" : "empty";
  std::string s = fmt::format("graph \"{}\" ({}): {} inputs, {} variables ({} trainable, {} free), {} nodes, {} outputs\n",
                              name_, state, p.inputs.size(), p.variables.size(), trainable,
                              p.variables.size() - trainable, p.nodes.size(), p.outputs.size());
  for (int32_t v : p.inputs) {
    const Value& val = p.values[static_cast<size_t>(v)];
    s += fmt::format("input {} {}: {}\n", Ref(v), val.name, MetaString(val.meta));
  }
  for (int32_t v : p.variables) {
    const Value& val = p.values[static_cast<size_t>(v)];
    s += fmt::format("variable {} {}: {} {}\n", Ref(v), val.name, MetaString(val.meta),
                     val.trainable ? "trainable" : "non-trainable");
  }
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node& n = p.nodes[i];
    std::string outs, ins, metas;
    for (int32_t v : n.outputs) {
      outs += (outs.empty() ? "" : ", ") + Ref(v);
      metas += (metas.empty() ? "" : ", ") + MetaString(p.values[static_cast<size_t>(v)].meta);
    }
    for (int32_t v : n.inputs) ins += (ins.empty() ? "" : ", ") + Ref(v);
    const std::string attrs = n.attrs.ToString();
    s += fmt::format("node #{}: {}{}{}({}){} : {}\n", i, outs, outs.empty() ? "" : " = ", n.op->name, ins,
                     attrs.empty() ? "" : " {" + attrs + "}", metas.empty() ? "-" : metas);
  }
  for (int32_t v : p.outputs) s += fmt::format("output {}\n", Ref(v));
  for (const Executable* exe : specialization_order_) s += DumpExecutable(*exe);
  return s;
}

}  // namespace oneflow::graph
