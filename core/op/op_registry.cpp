#include "core/op/op_registry.h"

#include <algorithm>
#include <memory>

#include "core/ops/register.h"

namespace oneflow {
namespace {

// The first def whose name is not less than `name` (defs are sorted by name).
auto LowerBound(const std::vector<std::unique_ptr<OpDef>>& defs, std::string_view name) {
  return std::lower_bound(defs.begin(), defs.end(), name,
                          [](const std::unique_ptr<OpDef>& d, std::string_view n) { return d->name < n; });
}

}  // namespace

bool OpDef::IsOptionalInput(size_t i) const {
  if (i >= inputs.size()) return false;
  return std::find(optional_inputs.begin(), optional_inputs.end(), inputs[i]) != optional_inputs.end();
}

bool OpDef::IsMutatedInput(size_t i) const {
  return std::find(mutated_inputs.begin(), mutated_inputs.end(), static_cast<int>(i)) != mutated_inputs.end();
}

const KernelDef* OpDef::FindKernel(DeviceType device, Symbol<DType> dtype) const {
  for (const KernelDef& k : kernels) {
    if (k.device == device && std::find(k.dtypes.begin(), k.dtypes.end(), dtype->data_type()) != k.dtypes.end()) {
      return &k;
    }
  }
  return nullptr;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();  // never destroyed: ops are used until the process ends
    RegisterCreationOps(*r);
    RegisterElementwiseOps(*r);
    RegisterReduceOps(*r);
    RegisterNnOps(*r);
    RegisterAttentionOps(*r);
    RegisterLossOps(*r);
    RegisterRecurrentOps(*r);
    RegisterViewOps(*r);
    RegisterDnnlOps(*r);
    RegisterFusedOps(*r);
    RegisterOptimizerOps(*r);
    RegisterIndexingOps(*r);
    RegisterNormalizationOps(*r);
    RegisterMathOps(*r);
    RegisterExtraReduceOps(*r);
    RegisterScanOps(*r);
    RegisterConvolutionOps(*r);
    RegisterResampleOps(*r);
    RegisterCollectiveOps(*r);
#ifdef OF_WITH_CUDA
    RegisterCudaKernels(*r);  // after every op it adds kernels to
#endif
    return r;
  }();
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  OF_CHECK_INTERNAL(Find(def.name) == nullptr) << "op '" << def.name << "' is registered twice";
  OF_CHECK_INTERNAL(def.infer != nullptr) << "op '" << def.name << "' has no shape inference";
  OF_CHECK_INTERNAL(def.view != nullptr || !def.kernels.empty()) << "op '" << def.name << "' has no kernel";
  const auto position = LowerBound(defs_, def.name);  // before def is moved from
  defs_.insert(position, std::make_unique<OpDef>(std::move(def)));
}

void OpRegistry::AddKernel(std::string_view op, KernelDef kernel) {
  auto it = LowerBound(defs_, op);
  OF_CHECK_INTERNAL(it != defs_.end() && (*it)->name == op)
      << "a kernel for op '" << op << "', which is not registered";
  OF_CHECK_INTERNAL((*it)->view == nullptr) << "a kernel for the view op '" << op << "'";
  (*it)->kernels.push_back(std::move(kernel));
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = LowerBound(defs_, name);
  return it != defs_.end() && (*it)->name == name ? it->get() : nullptr;
}

const OpDef& OpRegistry::Get(std::string_view name) const {
  const OpDef* def = Find(name);
  if (def == nullptr) OF_THROW(NotFound) << "no op named '" << name << "'";
  return *def;
}

std::vector<const OpDef*> OpRegistry::All() const {
  std::vector<const OpDef*> all;
  for (const auto& d : defs_) all.push_back(d.get());
  return all;
}

}  // namespace oneflow
