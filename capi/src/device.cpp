// Devices: whether CUDA is built, and the devices' memory allocators.
#include "capi/src/capi_internal.h"
#include "core/device/device.h"

using namespace oneflow;
using capi::Guard;

extern "C" {

int32_t of_cuda_is_built(void) { return BuiltWithCuda(); }

of_status_t* of_device_memory_stats(int32_t device_type, int32_t device_index, of_device_memory_stats_t* out_stats) {
  return Guard(__func__, [&] {
    const AllocatorStats s = GetBackend(Device::FromRaw(device_type, device_index)).allocator().stats();
    capi::WriteStats(out_stats,
                     of_device_memory_stats_t{sizeof(of_device_memory_stats_t), s.in_use, s.peak_in_use, s.reserved,
                                              s.peak_reserved, s.cached, s.allocations, s.device_allocations,
                                              s.device_frees, s.out_of_memory},
                     "out_stats");
  });
}

of_status_t* of_device_empty_cache(int32_t device_type, int32_t device_index) {
  return Guard(__func__, [&] { GetBackend(Device::FromRaw(device_type, device_index)).allocator().EmptyCache(); });
}

}  // extern "C"
