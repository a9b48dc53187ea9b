#include "core/op/op_registry.h"

#include <algorithm>
#include <memory>

#include "core/ops/register.h"

namespace oneflow {

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
    return r;
  }();
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  OF_CHECK_INTERNAL(Find(def.name) == nullptr) << "op '" << def.name << "' is registered twice";
  OF_CHECK_INTERNAL(def.infer != nullptr) << "op '" << def.name << "' has no shape inference";
  OF_CHECK_INTERNAL(def.view != nullptr || !def.kernels.empty()) << "op '" << def.name << "' has no kernel";
  auto it = std::lower_bound(defs_.begin(), defs_.end(), def.name,
                             [](const std::unique_ptr<OpDef>& d, const std::string& n) { return d->name < n; });
  defs_.insert(it, std::make_unique<OpDef>(std::move(def)));
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = std::lower_bound(defs_.begin(), defs_.end(), name,
                             [](const std::unique_ptr<OpDef>& d, std::string_view n) { return d->name < n; });
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
