// Storage: a block of device memory shared by tensors (views share one Storage).
// Either allocated from a backend's allocator or adopted from the caller together with a deleter,
// which runs exactly once when the last reference goes away.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "core/device/device.h"

namespace oneflow {

class Storage {
 public:
  using Deleter = std::function<void(void* data)>;

  // nbytes of uninitialised memory on `device`.
  static std::shared_ptr<Storage> Allocate(Device device, size_t nbytes);
  // Wraps memory the caller owns; `deleter` (may be empty) is called with `data` on destruction.
  static std::shared_ptr<Storage> Adopt(Device device, void* data, size_t nbytes, Deleter deleter);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  Storage(Device device, void* data, size_t nbytes, Deleter deleter)
      : device_(device), data_(data), nbytes_(nbytes), deleter_(std::move(deleter)) {}

  Device device_;
  void* data_;
  size_t nbytes_;
  Deleter deleter_;  // empty for memory from the allocator
  bool owned_by_allocator_ = false;
};

}  // namespace oneflow
