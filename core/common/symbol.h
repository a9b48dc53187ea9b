// Symbol<T>: an interned, immutable value. Equal values share one address for the life of the
// process, so a Symbol is one pointer and equality / hashing are pointer operations.
//
// T needs operator== and std::hash<T>. Interning is thread-safe; interned values are never freed
// (they are deliberately leaked so that no static destructor can run before a late user).
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_set>

namespace oneflow {

template <typename T>
class Symbol {
 public:
  Symbol() = default;  // the null symbol
  explicit Symbol(const T& value) : ptr_(Intern(value)) {}

  const T* get() const { return ptr_; }
  const T* operator->() const { return ptr_; }
  const T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

  friend bool operator==(Symbol a, Symbol b) { return a.ptr_ == b.ptr_; }

  // Rebuilds a Symbol from get() of an existing one (used at the C boundary). The pointer must come
  // from get(); anything else is undefined.
  static Symbol FromInterned(const T* ptr) {
    Symbol s;
    s.ptr_ = ptr;
    return s;
  }

 private:
  static const T* Intern(const T& value) {
    // unordered_set never moves its nodes, so the address of an element is stable across rehashing.
    static std::mutex mutex;
    static auto* table = new std::unordered_set<T>();
    std::lock_guard<std::mutex> lock(mutex);
    return &*table->insert(value).first;
  }

  const T* ptr_ = nullptr;
};

template <typename T>
Symbol<T> SymbolOf(const T& value) {
  return Symbol<T>(value);
}

}  // namespace oneflow

template <typename T>
struct std::hash<oneflow::Symbol<T>> {
  size_t operator()(oneflow::Symbol<T> s) const noexcept { return std::hash<const T*>()(s.get()); }
};
