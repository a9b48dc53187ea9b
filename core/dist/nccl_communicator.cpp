// NCCL communicators (Note [NCCL] in nccl_communicator.h). Built with the CUDA backend; without it, no tensor
// is on a CUDA device, and a communicator cannot be made.
#include "core/dist/nccl_communicator.h"

#include "core/common/error.h"

#ifdef OF_WITH_CUDA

#include <cuda_runtime_api.h>
#include <gloo/rendezvous/store.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <thread>
#include <variant>

#include "core/device/cuda_backend.h"
#include "core/device/dynamic_library.h"

namespace oneflow::dist {
namespace {

// NCCL's entry points, from libnccl.so.2 (Note [NCCL]: loaded, not linked).
struct NcclApi {
  decltype(&::ncclGetUniqueId) GetUniqueId;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError;
  decltype(&::ncclCommAbort) CommAbort;
  decltype(&::ncclGetErrorString) GetErrorString;
  decltype(&::ncclGetLastError) GetLastError;
  decltype(&::ncclAllReduce) AllReduce;
  decltype(&::ncclBroadcast) Broadcast;
  decltype(&::ncclAllGather) AllGather;
};

// The API, or why it could not be loaded.
std::variant<NcclApi, std::string> LoadNccl() {
  // The loader's search path first, then the CUDA toolkit this library was built with.
  DynamicLibrary lib({"libnccl.so.2", OF_CUDA_LIBRARY_DIR "/libnccl.so.2"});
  if (!lib.loaded()) {
    return fmt::format(
        "NCCL could not be loaded ({}): collectives on CUDA tensors need libnccl.so.2 (from the CUDA "
        "install; add its directory to LD_LIBRARY_PATH)",
        lib.why());
  }
  NcclApi api{};
  lib.Bind(api.GetUniqueId, "ncclGetUniqueId");
  lib.Bind(api.CommInitRankConfig, "ncclCommInitRankConfig");
  lib.Bind(api.CommGetAsyncError, "ncclCommGetAsyncError");
  lib.Bind(api.CommAbort, "ncclCommAbort");
  lib.Bind(api.GetErrorString, "ncclGetErrorString");
  lib.Bind(api.GetLastError, "ncclGetLastError");
  lib.Bind(api.AllReduce, "ncclAllReduce");
  lib.Bind(api.Broadcast, "ncclBroadcast");
  lib.Bind(api.AllGather, "ncclAllGather");
  if (!lib.missing().empty()) {
    return fmt::format("the NCCL that was loaded lacks {} (NCCL 2.14 or newer is needed)", lib.missing());
  }
  return api;
}

const NcclApi& Nccl() {
  static const std::variant<NcclApi, std::string> loaded = LoadNccl();
  if (const std::string* why = std::get_if<std::string>(&loaded)) OF_THROW(Unavailable) << *why;
  return std::get<NcclApi>(loaded);
}

ncclDataType_t NcclType(Symbol<DType> dtype) {
  switch (dtype->data_type()) {
    case DataType::kInt8: return ncclInt8;
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    default: OF_THROW(Unimplemented) << "all_reduce of " << dtype << " on CUDA: NCCL has no " << dtype << " reduction";
  }
}

void SetDevice(int32_t device) {
  if (cudaError_t err = cudaSetDevice(device); err != cudaSuccess) {
    throw std::runtime_error(fmt::format("cudaSetDevice({}): {}", device, cudaGetErrorString(err)));
  }
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kMean: return ncclAvg;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kMin: return ncclMin;
  }
  OF_THROW(Internal) << "reduce op " << static_cast<int32_t>(op);
}

}  // namespace

struct NcclCommunicator::State {
  int32_t device = -1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;

  // Aborts the communicator: nothing is in flight then (every collective was waited for, or failed).
  ~State() {
    Abort();
    if (stream != nullptr) {
      cudaSetDevice(device);
      cudaStreamDestroy(stream);
    }
  }

  // Throws (std::runtime_error, for the group's Fail) unless `result` is success or "in progress".
  void Check(ncclResult_t result, std::string_view what) {
    if (result == ncclSuccess || result == ncclInProgress) return;
    const char* detail = comm != nullptr ? Nccl().GetLastError(comm) : "";
    throw std::runtime_error(fmt::format("{}: NCCL error: {}{}{}", what, Nccl().GetErrorString(result),
                                         detail != nullptr && *detail != '\0' ? ": " : "", detail ? detail : ""));
  }
  void Abort() {
    if (comm != nullptr) Nccl().CommAbort(comm);
    comm = nullptr;
  }
  // Polls until `done` is true, NCCL reports an error, or `deadline` passes (both abort the communicator).
  template <typename Done>
  void Poll(std::string_view what, std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout,
            Done done) {
    for (auto pause = std::chrono::microseconds(5);; pause = std::min(pause * 2, std::chrono::microseconds(1000))) {
      ncclResult_t async = ncclSuccess;
      Check(Nccl().CommGetAsyncError(comm, &async), what);
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string message = fmt::format("{}: NCCL error: {}", what, Nccl().GetErrorString(async));
        Abort();
        throw std::runtime_error(message);
      }
      if (async == ncclSuccess && done()) return;
      if (std::chrono::steady_clock::now() > deadline) {
        Abort();
        throw std::runtime_error(fmt::format("{}: not done within {} ms", what, timeout.count()));
      }
      std::this_thread::sleep_for(pause);
    }
  }
  // Enqueues a collective with `enqueue`, then waits until the stream has run it.
  template <typename Enqueue>
  void Run(std::chrono::milliseconds timeout, std::string_view what, Enqueue enqueue) {
    if (comm == nullptr) throw std::runtime_error(fmt::format("{}: the NCCL communicator was aborted", what));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // NCCL's stream does not wait for the kernels that wrote the buffers (Note [One stream per CUDA device]).
    CudaBackendFor(Device{DeviceType::kCUDA, device}).Synchronize();
    SetDevice(device);
    Check(enqueue(), what);
    Poll(what, deadline, timeout, [&] {
      const cudaError_t err = cudaStreamQuery(stream);
      if (err == cudaSuccess) return true;
      if (err == cudaErrorNotReady) return false;
      Abort();
      throw std::runtime_error(fmt::format("{}: CUDA error: {}", what, cudaGetErrorString(err)));
    });
  }
};

NcclCommunicator::NcclCommunicator(gloo::rendezvous::Store& store, const std::string& key, int32_t rank,
                                   int32_t world_size, int32_t device, std::chrono::milliseconds timeout)
    : state_(std::make_unique<State>()), device_(device), timeout_(timeout) {
  state_->device = device;
  const NcclApi& nccl = Nccl();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  ncclUniqueId id{};
  if (rank == 0) {
    state_->Check(nccl.GetUniqueId(&id), "ncclGetUniqueId");
    store.set(key, std::vector<char>(id.internal, id.internal + sizeof id.internal));
  } else {
    store.wait({key}, timeout);
    const std::vector<char> bytes = store.get(key);
    if (bytes.size() != sizeof id.internal) {
      throw std::runtime_error("NCCL's unique id in the store has the wrong size");
    }
    std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  }
  SetDevice(device);
  if (cudaError_t err = cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking); err != cudaSuccess) {
    throw std::runtime_error(fmt::format("cudaStreamCreate: {}", cudaGetErrorString(err)));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  state_->Check(nccl.CommInitRankConfig(&state_->comm, world_size, id, rank, &config), "joining NCCL");
  state_->Poll("joining NCCL", deadline, timeout, [] { return true; });
}

NcclCommunicator::~NcclCommunicator() = default;

void NcclCommunicator::AllReduce(const void* in, void* out, size_t count, Symbol<DType> dtype, ReduceOp op) {
  const ncclDataType_t type = NcclType(dtype);
  State& s = *state_;
  s.Run(timeout_, "ncclAllReduce", [&] {
    return Nccl().AllReduce(in, out, count, type, NcclOp(op), s.comm, s.stream);
  });
}

void NcclCommunicator::Broadcast(void* buffer, size_t nbytes, int32_t root) {
  State& s = *state_;
  s.Run(timeout_, "ncclBroadcast", [&] {
    return Nccl().Broadcast(buffer, buffer, nbytes, ncclUint8, root, s.comm, s.stream);
  });
}

void NcclCommunicator::AllGather(const void* in, void* out, size_t nbytes_per_rank) {
  State& s = *state_;
  s.Run(timeout_, "ncclAllGather", [&] {
    return Nccl().AllGather(in, out, nbytes_per_rank, ncclUint8, s.comm, s.stream);
  });
}

}  // namespace oneflow::dist

#else  // no CUDA backend in this build: no tensor is on a CUDA device

namespace oneflow::dist {

struct NcclCommunicator::State {};

NcclCommunicator::NcclCommunicator(gloo::rendezvous::Store&, const std::string&, int32_t, int32_t, int32_t,
                                   std::chrono::milliseconds)
    : device_(-1), timeout_(0) {
  OF_THROW(Unavailable) << "this build of oneflow_c has no CUDA backend, so no NCCL collectives";
}
NcclCommunicator::~NcclCommunicator() = default;
void NcclCommunicator::AllReduce(const void*, void*, size_t, Symbol<DType>, ReduceOp) {}
void NcclCommunicator::Broadcast(void*, size_t, int32_t) {}
void NcclCommunicator::AllGather(const void*, void*, size_t) {}

}  // namespace oneflow::dist

#endif
