// Storage: a block of device memory shared by tensors (views share one Storage).
// Either allocated from a backend's allocator or adopted from the caller together with a deleter,
// which runs exactly once when the last reference goes away.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/device/device.h"

namespace oneflow {

class Storage {
 public:
  using Deleter = std::function<void(void* data)>;

  // nbytes of uninitialised memory on `device`.
  static std::shared_ptr<Storage> Allocate(Device device, size_t nbytes);
  // Wraps memory the caller owns; `deleter` (may be empty) is called with `data` on destruction, or
  // before Adopt returns if it fails. `read_only` memory is never written through the engine
  // (CheckWritable refuses it: a DLPack import marked read-only).
  static std::shared_ptr<Storage> Adopt(Device device, void* data, size_t nbytes, Deleter deleter,
                                        bool read_only = false);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool read_only() const { return read_only_; }

  // Note [Version counter]: every in-place write through the engine (an op's mutated inputs, optimizer
  // updates, initialisers, safetensors load_into, a graph run's updates) bumps the version of the
  // storage it writes, which all views of it share (as PyTorch's version counter). Autograd records
  // the version of each tensor it saves for backward and refuses to compute a gradient from a saved
  // tensor whose version changed (core/autograd/autograd.cpp). Writes by the owner of adopted memory
  // behind the library's back are not seen.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  void BumpVersion() { version_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  Storage(Device device, void* data, size_t nbytes, Deleter deleter)
      : device_(device), data_(data), nbytes_(nbytes), deleter_(std::move(deleter)) {}

  Device device_;
  void* data_;
  size_t nbytes_;
  Deleter deleter_;  // empty for memory from the allocator
  bool owned_by_allocator_ = false;
  bool read_only_ = false;
  std::atomic<uint64_t> version_{0};
};

}  // namespace oneflow
