// Intrusive reference counting, for objects whose count is also driven from the C ABI
// (of_tensor_retain / of_tensor_release act on the same counter as IntrusivePtr).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace oneflow {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

  void Retain() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  // Drops one reference; deletes the object when it was the last.
  void Release() const {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  int64_t refcount() const { return refcount_.load(std::memory_order_relaxed); }

 protected:
  virtual ~RefCounted() = default;

 private:
  mutable std::atomic<int64_t> refcount_{0};
};

template <typename T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  IntrusivePtr(std::nullptr_t) {}  // NOLINT
  explicit IntrusivePtr(T* p) : p_(p) {
    if (p_) p_->Retain();
  }
  IntrusivePtr(const IntrusivePtr& o) : IntrusivePtr(o.p_) {}
  IntrusivePtr(IntrusivePtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <typename U>
  IntrusivePtr(IntrusivePtr<U> o) : p_(o.Detach()) {}  // NOLINT: upcast
  ~IntrusivePtr() {
    if (p_) p_->Release();
  }
  IntrusivePtr& operator=(IntrusivePtr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  // Takes over one reference the caller already owns (no Retain).
  static IntrusivePtr Adopt(T* p) {
    IntrusivePtr r;
    r.p_ = p;
    return r;
  }
  // Gives up ownership of one reference without releasing it.
  T* Detach() { return std::exchange(p_, nullptr); }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  friend bool operator==(const IntrusivePtr& a, const IntrusivePtr& b) { return a.p_ == b.p_; }

 private:
  T* p_ = nullptr;
};

template <typename T, typename... Args>
IntrusivePtr<T> MakeIntrusive(Args&&... args) {
  return IntrusivePtr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace oneflow
