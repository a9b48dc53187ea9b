#include "core/graph/passes/passes.h"

namespace oneflow::graph {

// Note [Symbols in attributes]
// A target shape traced with a named symbol (reshape to (batch, seq, heads, d) inside a graph whose
// inputs declare `seq`) keeps the symbol in its attribute. A plan is compiled for concrete input sizes,
// which bind every symbol the inputs declare: each int-list attribute entry that encodes a bound
// symbol becomes its size here, before concrete inference, so that the ops see the sizes they run at.
// Small negative entries (-1 = inferred, negative dims) never encode symbols and are left alone.
void ResolveSymbolAttrs(Ir& ir, const ShapeBinding& binding) {
  for (IrNode& n : ir.nodes) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> resolved;
    for (const auto& [name, value] : n.attrs.items()) {
      const auto* ints = std::get_if<std::vector<int64_t>>(&value);
      if (ints == nullptr) continue;
      std::vector<int64_t> sizes = *ints;
      bool changed = false;
      for (int64_t& v : sizes) {
        if (v >= -1 || v == Dim::kUnknownValue || v >= Dim::kUnknownValue + Dim::kMaxSymbols) continue;
        const Dim d = binding.Resolve(Dim::FromRaw(v, name));
        if (d.is_known()) {
          v = d.value();
          changed = true;
        }
      }
      if (changed) resolved.emplace_back(name, std::move(sizes));
    }
    for (auto& [name, sizes] : resolved) n.attrs.Set(name, std::move(sizes));
  }
}

}  // namespace oneflow::graph
