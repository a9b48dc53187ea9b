#include "core/tensor/storage.h"

namespace oneflow {

std::shared_ptr<Storage> Storage::Allocate(Device device, size_t nbytes) {
  Backend& backend = GetBackend(device);
  void* data = backend.allocator().Allocate(nbytes);
  try {
    std::shared_ptr<Storage> s(new Storage(device, data, nbytes, nullptr));
    s->owned_by_allocator_ = true;
    return s;
  } catch (...) {
    backend.allocator().Deallocate(data, nbytes);
    throw;
  }
}

std::shared_ptr<Storage> Storage::Adopt(Device device, void* data, size_t nbytes, Deleter deleter, bool read_only) {
  // The deleter must run exactly once even if wrapping fails: until `raw` holds it, it is ours to call;
  // afterwards shared_ptr deletes `raw` (and so runs it) if its own allocation throws.
  Storage* raw;
  try {
    raw = new Storage(device, data, nbytes, nullptr);
  } catch (...) {
    if (deleter) deleter(data);
    throw;
  }
  raw->deleter_ = std::move(deleter);
  raw->read_only_ = read_only;
  return std::shared_ptr<Storage>(raw);
}

Storage::~Storage() {
  if (owned_by_allocator_) {
    GetBackend(device_).allocator().Deallocate(data_, nbytes_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace oneflow
