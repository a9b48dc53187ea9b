// Attrs: the attribute values of one op call (stride, dim, keepdim, ...), by name.
//
// Values are a small closed set of types; an op's registry entry lists the names it takes with their
// defaults, and op dispatch checks a call's Attrs against that list. Attrs are copied into autograd
// nodes and graph nodes, and printed in graph dumps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/common/dtype.h"
#include "core/common/error.h"

namespace oneflow {

using AttrValue = std::variant<bool, int64_t, double, std::vector<int64_t>, Symbol<DType>, std::string>;

// "true", "3", "0.5", "[1, 2]", "float32", "\"mean\"".
std::string AttrValueToString(const AttrValue& value);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string_view, AttrValue>> values) {
    for (const auto& [name, value] : values) Set(name, value);
  }

  // Adds or replaces `name`.
  Attrs& Set(std::string_view name, AttrValue value);
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  const AttrValue* Find(std::string_view name) const;

  // The value of `name` as T; Internal if absent or of another type (dispatch fills defaults and
  // checks types before kernels run, so this is an engine bug).
  template <typename T>
  const T& Get(std::string_view name) const {
    const AttrValue* v = Find(name);
    OF_CHECK_INTERNAL(v != nullptr) << "attribute '" << name << "' is missing";
    const T* p = std::get_if<T>(v);
    OF_CHECK_INTERNAL(p != nullptr) << "attribute '" << name << "' has another type";
    return *p;
  }
  int64_t Int(std::string_view name) const { return Get<int64_t>(name); }
  double Float(std::string_view name) const { return Get<double>(name); }
  bool Bool(std::string_view name) const { return Get<bool>(name); }
  const std::vector<int64_t>& Ints(std::string_view name) const { return Get<std::vector<int64_t>>(name); }

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  std::string ToString() const;  // "stride=[1, 1], groups=1"

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace oneflow
