// Shared libraries opened at first use (dlopen) instead of linked: CUDA's libraries (NCCL, cuBLAS), so that
// liboneflow_c loads and runs on the CPU where they are absent, and the calls that need them are Unavailable,
// saying why. Built with the CUDA backend.
#pragma once

#include <dlfcn.h>
#include <fmt/format.h>

#include <initializer_list>
#include <string>

namespace oneflow {

class DynamicLibrary {
 public:
  // The first of `names` (sonames the loader searches for, or paths) that dlopen opens; on failure
  // loaded() is false and why() holds the loader's last message. The library stays loaded for the life of
  // the process (its functions are kept in static tables).
  explicit DynamicLibrary(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) return;
      why_ = dlerror();
    }
  }
  bool loaded() const { return handle_ != nullptr; }
  const std::string& why() const { return why_; }

  // Points `fn` at `symbol` (a function of the type fn's declaration names); a symbol the library lacks
  // leaves fn null and is listed in missing().
  template <typename Fn>
  void Bind(Fn& fn, const char* symbol) {
    fn = reinterpret_cast<Fn>(dlsym(handle_, symbol));
    if (fn == nullptr) missing_ += fmt::format("{}{}", missing_.empty() ? "" : ", ", symbol);
  }
  // The symbols Bind did not find, comma-separated; empty when all were there.
  const std::string& missing() const { return missing_; }

 private:
  void* handle_ = nullptr;
  std::string why_;
  std::string missing_;
};

}  // namespace oneflow
