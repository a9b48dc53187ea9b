#include "core/op/attrs.h"

#include <fmt/ranges.h>

namespace oneflow {

std::string AttrValueToString(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<V, std::vector<int64_t>>) return fmt::format("[{}]", fmt::join(v, ", "));
        else if constexpr (std::is_same_v<V, std::string>) return fmt::format("\"{}\"", v);
        else return fmt::format("{}", v);
      },
      value);
}

Attrs& Attrs::Set(std::string_view name, AttrValue value) {
  for (auto& [n, v] : items_) {
    if (n == name) {
      v = std::move(value);
      return *this;
    }
  }
  items_.emplace_back(std::string(name), std::move(value));
  return *this;
}

const AttrValue* Attrs::Find(std::string_view name) const {
  for (const auto& [n, v] : items_) {
    if (n == name) return &v;
  }
  return nullptr;
}

std::string Attrs::ToString() const {
  std::string out;
  for (const auto& [n, v] : items_) {
    if (!out.empty()) out += ", ";
    out += n + "=" + AttrValueToString(v);
  }
  return out;
}

}  // namespace oneflow
