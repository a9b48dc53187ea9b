// The C ABI of safetensors I/O (core/io/safetensors.h) and of the named-tensor list it returns.
#include <memory>
#include <string>

#include "capi/src/capi_internal.h"
#include "core/io/safetensors.h"

using namespace oneflow;
using capi::Flag;
using capi::Guard;
using capi::Require;
using capi::Unwrap;
using capi::Wrap;

struct of_tensor_list_t {
  safetensors::NamedTensors items;
};

namespace {

// The (names[i], tensors[i]) pairs of a C call; the handles are borrowed for the call's length.
safetensors::NamedTensors Named(const char* const* names, const of_tensor_t* const* tensors, size_t n) {
  if (n > 0) {
    Require(names, "names");
    Require(tensors, "tensors");
  }
  safetensors::NamedTensors list;
  list.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const char* name = Require(names[i], fmt::format("names[{}]", i));
    list.emplace_back(name, capi::Borrow(tensors[i], fmt::format("tensors[{}]", i)));
  }
  return list;
}

const safetensors::NamedTensors::value_type& Item(const of_tensor_list_t* list, size_t index) {
  const auto& items = Require(list, "list")->items;
  if (index >= items.size()) {
    OF_THROW(OutOfRange) << "index " << index << " is past the end of the list of " << items.size() << " tensors";
  }
  return items[index];
}

}  // namespace

extern "C" {

size_t of_tensor_list_count(const of_tensor_list_t* list) { return list == nullptr ? 0 : list->items.size(); }

of_status_t* of_tensor_list_name(const of_tensor_list_t* list, size_t index, const char** out_name) {
  return Guard(__func__, [&] {
    const char* name = Item(list, index).first.c_str();
    *Require(out_name, "out_name") = name;
  });
}

of_status_t* of_tensor_list_get(const of_tensor_list_t* list, size_t index, of_tensor_t** out_tensor) {
  return Guard(__func__, [&] {
    const TensorPtr& t = Item(list, index).second;
    Require(out_tensor, "out_tensor");
    *out_tensor = Wrap(t);  // last: the new reference must not leak if a check throws
  });
}

void of_tensor_list_destroy(of_tensor_list_t* list) { delete list; }

of_status_t* of_safetensors_save(const char* path, const char* const* names, const of_tensor_t* const* tensors,
                                 size_t n) {
  return Guard(__func__, [&] { safetensors::Save(Require(path, "path"), Named(names, tensors, n)); });
}

of_status_t* of_safetensors_load(of_session_t* session, const char* path, of_tensor_list_t** out_list) {
  return Guard(__func__, [&] {
    Session& s = capi::SessionOf(session);
    Require(path, "path");
    Require(out_list, "out_list");
    SessionScope scope(s);
    auto list = std::make_unique<of_tensor_list_t>();
    list->items = safetensors::Load(path, s.default_device());
    *out_list = list.release();
  });
}

of_status_t* of_safetensors_load_into(const char* path, const char* const* names, of_tensor_t* const* tensors,
                                      size_t n, int32_t strict) {
  return Guard(__func__, [&] {
    Require(path, "path");
    const bool is_strict = Flag(strict, "strict");
    safetensors::LoadInto(path, Named(names, tensors, n), is_strict);
  });
}

}  // extern "C"
