// NCCL communicators: how a process group (core/dist/process_group.h) runs its collectives on CUDA tensors.
//
// Note [NCCL]
// A process group moves CPU tensors with Gloo and CUDA tensors with NCCL (from the CUDA install), through the
// same calls and ops. The group makes its NCCL communicator on its first CUDA collective, on the group's
// thread, so at the same point of every rank's sequence of collectives: rank 0 makes NCCL's unique id and
// writes it to the group's rendezvous store under a key named after that point, the others read it, and each
// rank joins with the GPU of that collective's tensor (one GPU per rank; a later collective on another GPU is
// refused). Even a group of one rank runs its CUDA collectives through NCCL (a one-rank communicator), so that
// one GPU exercises this path.
//
// libnccl.so.2 is loaded then (dlopen), not linked: liboneflow_c loads and runs its CPU collectives where NCCL
// is absent, and a CUDA collective there is Unavailable, saying so.
//
// The communicator is non-blocking (ncclConfig_t.blocking = 0): after enqueueing a collective on the
// communicator's own stream, the group's thread polls the stream and NCCL's asynchronous error until the
// collective is done or the group's timeout has passed, and then aborts the communicator. So a peer that died
// or hangs gives an error (Note [Collective failures] names the peer), never a hang; the group is broken after.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/common/dtype.h"
#include "core/dist/process_group.h"

namespace oneflow::dist {

class NcclCommunicator {
 public:
  // Joins: every rank with the same `key` (where rank 0 publishes NCCL's unique id in `store`), its rank, the
  // world size and the CUDA device index it uses. Throws std::runtime_error when NCCL or CUDA fails or the
  // timeout passes (the group reports it, Note [Collective failures]); Unavailable when NCCL cannot be loaded.
  NcclCommunicator(gloo::rendezvous::Store& store, const std::string& key, int32_t rank, int32_t world_size,
                   int32_t device, std::chrono::milliseconds timeout);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int32_t device() const { return device_; }

  // The collectives on device memory of this communicator's GPU; each returns when it is done (or throws as
  // the constructor does). `in` may equal `out` (in place). AllReduce needs a dtype NCCL reduces (Unimplemented
  // otherwise: bool, int16, the unsigned 16- and 32-bit integers); the others move bytes.
  void AllReduce(const void* in, void* out, size_t count, Symbol<DType> dtype, ReduceOp op);
  void Broadcast(void* buffer, size_t nbytes, int32_t root);
  void AllGather(const void* in, void* out, size_t nbytes_per_rank);

 private:
  struct State;
  std::unique_ptr<State> state_;  // NCCL's and CUDA's handles (nccl_communicator.cpp)
  int32_t device_;
  std::chrono::milliseconds timeout_;
};

}  // namespace oneflow::dist
