#include "core/op/dispatch.h"

#include <utility>

#include "core/autograd/autograd.h"
#include "core/op/autocast.h"
#include "core/op/layout.h"
#include "core/session/session.h"
#include "core/tensor/copy.h"
#include "core/tensor/factory.h"

namespace oneflow {
namespace {

thread_local OpInterceptor* current_interceptor = nullptr;

void CheckAttrs(const OpDef& op, Attrs& attrs) {
  for (const auto& [name, value] : attrs.items()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : op.attrs) {
      if (s.name == name) spec = &s;
    }
    OF_CHECK_INTERNAL(spec != nullptr) << "op has no attribute '" << name << "'";
    OF_CHECK_INTERNAL(value.index() == spec->default_value.index()) << "attribute '" << name << "' has the wrong type";
  }
  for (const AttrSpec& s : op.attrs) {
    if (attrs.Has(s.name)) continue;
    OF_CHECK_INTERNAL(!s.required) << "required attribute '" << s.name << "' is missing";
    attrs.Set(s.name, s.default_value);
  }
}

void CheckInputs(const OpDef& op, const std::vector<TensorPtr>& inputs) {
  if (op.variadic_inputs) {
    OF_CHECK(inputs.size() >= op.inputs.size()) << "expects at least " << op.inputs.size() << " input(s), got "
                                                << inputs.size();
  } else {
    OF_CHECK_INTERNAL(inputs.size() == op.inputs.size())
        << "expects " << op.inputs.size() << " inputs, got " << inputs.size();
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] && !op.IsOptionalInput(i)) {
      const std::string& name = i < op.inputs.size() ? op.inputs[i] : op.inputs.back();
      OF_THROW(InvalidArgument) << "input '" << name << "' is null";
    }
  }
}

std::vector<TensorPtr> RunEager(const OpDef& op, std::vector<TensorPtr>& inputs, const Attrs& attrs) {
  Device device;
  bool have_device = false;
  std::vector<TensorMeta> in_metas(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    if (inputs[i]->is_lazy()) {
      const std::string& name = i < op.inputs.size() ? op.inputs[i] : op.inputs.back();
      OF_THROW(FailedPrecondition) << "input '" << name << "' is a lazy tensor of " << GraphLabel(inputs[i]->lazy_graph())
                                   << ": it can be used only by ops while that graph is being built on this "
                                      "thread and session";
    }
    in_metas[i] = MetaOf(*inputs[i]);
    if (!have_device) {
      device = inputs[i]->device();
      have_device = true;
    } else if (inputs[i]->device() != device) {
      const std::string& name = i < op.inputs.size() ? op.inputs[i] : op.inputs.back();
      OF_THROW(InvalidArgument) << "input '" << name << "' is on " << inputs[i]->device() << " but other inputs are on "
                                << device;
    }
  }
  std::vector<TensorMeta> out_metas = op.infer(in_metas, attrs);
  OF_CHECK_INTERNAL(out_metas.size() == op.outputs.size()) << "inference returned " << out_metas.size() << " outputs";

  Session& session = Session::Current();
  std::vector<TensorPtr> outputs;
  outputs.reserve(out_metas.size());
  if (op.view != nullptr) {
    outputs.push_back(op.view(inputs[0], out_metas[0], attrs));
    return outputs;
  }
  const Symbol<DType> key = inputs.empty() ? out_metas[0].dtype : inputs[static_cast<size_t>(op.dtype_input)]->dtype();
  const KernelDef* kernel = op.FindKernel(device.type, key);
  if (kernel == nullptr) {
    OF_THROW(Unimplemented) << "no kernel for dtype " << key << " on " << device;
  }
  const MemoryFormat layout = CallLayout(op, *kernel, in_metas, attrs);
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = KernelInput(op, i, inputs[i], layout, &session.thread_pool());
  for (const TensorPtr& t : inputs) {
    if (t) CheckSavedVersion(*t);  // a backward reading what the forward saved
  }
  if (op.WritesInputs(attrs)) {
    for (int m : op.mutated_inputs) {
      const TensorPtr& t = inputs[static_cast<size_t>(m)];
      if (t) CheckWritable(*t, "input '" + op.inputs[static_cast<size_t>(m)] + "'");
    }
  }
  for (size_t j = 0; j < out_metas.size(); ++j) {
    const TensorMeta& m = out_metas[j];
    outputs.push_back(Empty(m.dtype, m.shape, m.device, OutputFormat(op, j, m.shape, layout)));
  }
  KernelContext ctx{inputs, outputs, attrs, session.thread_pool(), session.generator(), &op};
  kernel->fn(ctx);
  op.MarkInputsWritten(inputs, attrs);
  return outputs;
}

}  // namespace

TensorMeta MetaOf(const Tensor& t) { return TensorMeta{t.dtype(), t.shape(), t.device(), t.memory_format()}; }

std::vector<TensorPtr> Apply(const OpDef& op, std::vector<TensorPtr> inputs, Attrs attrs) {
  try {
    CheckInputs(op, inputs);
    CheckAttrs(op, attrs);
    inputs = Autocast::CastInputs(op, std::move(inputs));  // Note [Autocast]
    // Autograd sees the caller's tensors, not the contiguous copies the kernel may get.
    const bool record = op.backward != nullptr && GradMode::is_enabled() &&
                        std::any_of(inputs.begin(), inputs.end(), [](const TensorPtr& t) { return t && t->requires_grad(); });
    std::vector<TensorPtr> original;
    if (record) original = inputs;
    OpInterceptor* interceptor = OpInterceptor::Current();
    std::vector<TensorPtr> outputs =
        interceptor != nullptr ? interceptor->Intercept(op, std::move(inputs), attrs) : RunEager(op, inputs, attrs);
    if (record) RecordGradNode(op, attrs, original, outputs);
    return outputs;
  } catch (const Error& e) {
    if (e.message().starts_with(op.name + ":")) throw;
    throw Error(e.code(), op.name + ": " + e.message());
  }
}

TensorPtr Apply1(const OpDef& op, std::vector<TensorPtr> inputs, Attrs attrs) {
  return Apply(op, std::move(inputs), std::move(attrs))[0];
}

OpInterceptor* OpInterceptor::Current() {
  return current_interceptor != nullptr && current_interceptor->Active() ? current_interceptor : nullptr;
}

OpInterceptor* OpInterceptor::Install(OpInterceptor* interceptor) {
  return std::exchange(current_interceptor, interceptor);
}

OpInterceptorScope::OpInterceptorScope(OpInterceptor* interceptor) : previous_(current_interceptor) {
  current_interceptor = interceptor;
}
OpInterceptorScope::~OpInterceptorScope() { current_interceptor = previous_; }

}  // namespace oneflow
