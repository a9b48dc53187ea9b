// matmul and linear on CUDA through cuBLAS, on the plan the CPU kernel uses (core/ops/matmul_plan.h).
//
// Note [cuBLAS]
// libcublas.so.13 is loaded at the first product on a CUDA tensor, not linked (as NCCL, Note [NCCL]): so that
// liboneflow_c loads where CUDA's libraries are absent, and a product there is Unavailable, saying why. Each
// device has one handle, on the device's stream (Note [One stream per CUDA device]), used under a mutex
// (a handle is not for concurrent use). float32 products compute in float32 (CUBLAS_COMPUTE_32F, no TF32:
// PyTorch's default for matmul), float16 and bfloat16 ones accumulate in float32, float64 in float64.
//
// cuBLAS is column-major: row-major C = A B is computed as the column-major C^T = B^T A^T, where the
// transpose of a row-major matrix is its data read column-major, and that of a column-major one is asked
// for with CUBLAS_OP_T.
#include <cublas_api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>

#include "core/device/dynamic_library.h"
#include "core/ops/cuda/cuda_kernel.h"
#include "core/ops/matmul_plan.h"

namespace oneflow::cuda {
namespace {

struct CublasApi {
  decltype(&::cublasCreate_v2) Create;
  decltype(&::cublasSetStream_v2) SetStream;
  decltype(&::cublasGetStatusString) StatusString;
  decltype(&::cublasGemmStridedBatchedEx_64) Gemm;
};

// The API, or why it could not be loaded.
std::variant<CublasApi, std::string> LoadCublas() {
  // The loader's search path first, then the CUDA toolkit this library was built with.
  DynamicLibrary lib({"libcublas.so.13", OF_CUDA_LIBRARY_DIR "/libcublas.so.13"});
  if (!lib.loaded()) {
    return fmt::format(
        "cuBLAS could not be loaded ({}): matmul and linear on CUDA tensors need libcublas.so.13 (from "
        "the CUDA install; add its directory to LD_LIBRARY_PATH)",
        lib.why());
  }
  CublasApi api{};
  lib.Bind(api.Create, "cublasCreate_v2");
  lib.Bind(api.SetStream, "cublasSetStream_v2");
  lib.Bind(api.StatusString, "cublasGetStatusString");
  lib.Bind(api.Gemm, "cublasGemmStridedBatchedEx_64");
  if (!lib.missing().empty()) return fmt::format("the cuBLAS that was loaded lacks {}", lib.missing());
  return api;
}

const CublasApi& Cublas() {
  static const std::variant<CublasApi, std::string> loaded = LoadCublas();
  if (const std::string* why = std::get_if<std::string>(&loaded)) OF_THROW(Unavailable) << *why;
  return std::get<CublasApi>(loaded);
}

void CheckCublas(cublasStatus_t status, std::string_view what, Device device) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const StatusCode code = status == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  throw Error(code, fmt::format("{} on {} failed: {}", what, device, Cublas().StatusString(status)));
}

// The device's handle, made on first use; callers hold its mutex while they use it.
struct Handle {
  std::mutex mutex;
  cublasHandle_t handle = nullptr;
};
Handle& HandleFor(Device device) {
  static std::mutex mutex;
  static auto* handles = new std::map<int32_t, std::unique_ptr<Handle>>();  // kept until the process ends
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Handle>& h = (*handles)[device.index];
  if (!h) {
    const cudaStream_t stream = StreamFor(device);
    auto made = std::make_unique<Handle>();
    CheckCublas(Cublas().Create(&made->handle), "creating a cuBLAS handle", device);
    CheckCublas(Cublas().SetStream(made->handle, stream), "cublasSetStream", device);
    h = std::move(made);
  }
  return *h;
}

cudaDataType CudaType(Symbol<DType> dtype) {
  switch (dtype->data_type()) {
    case DataType::kFloat64:
      return CUDA_R_64F;
    case DataType::kFloat16:
      return CUDA_R_16F;
    case DataType::kBFloat16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// The transpose of a rows x cols matrix (element (i, j) at i * rs + j * cs) as cuBLAS takes it: the op to
// apply to the data read column-major, and its leading dimension.
struct Transposed {
  cublasOperation_t op;
  int64_t ld;
};
Transposed TransposeOf(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1) return {CUBLAS_OP_N, std::max<int64_t>({rs, cols, 1})};  // row-major (one row: any rs)
  return {CUBLAS_OP_T, std::max<int64_t>({cs, rows, 1})};               // column-major
}

// c (row-major, contiguous) = a b (+ bias broadcast over c's rows), over the plan's batch.
void RunGemm(KernelContext& ctx, const GemmPlan& p, const void* a, const void* b, const Tensor* bias, const Tensor& c) {
  if (c.numel() == 0) return;
  const Device device = c.device();
  const std::string_view what = OpName(ctx);
  if (bias != nullptr) {  // c = bias first, then c += a b
    const ElementwiseOperand operand = OperandOf(*bias, c.shape());
    RunElementwise(c, {&operand, 1}, FusedProgram{1, {}}, 1.0, what);
  }
  if (p.k == 0) {
    if (bias == nullptr) CheckCuda(cudaMemsetAsync(c.raw_data(), 0, c.nbytes(), StreamFor(device)), what, device);
    return;
  }
  const Transposed ta = TransposeOf(p.m, p.k, p.a_rs, p.a_cs), tb = TransposeOf(p.k, p.n, p.b_rs, p.b_cs);
  const cudaDataType type = CudaType(c.dtype());
  const bool f64 = c.dtype()->data_type() == DataType::kFloat64;
  const double alpha64 = 1.0, beta64 = bias != nullptr ? 1.0 : 0.0;
  const float alpha32 = 1.0f, beta32 = bias != nullptr ? 1.0f : 0.0f;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const auto esize = static_cast<int64_t>(c.dtype()->bytes());
  Handle& h = HandleFor(device);
  std::lock_guard<std::mutex> lock(h.mutex);
  StreamFor(device);  // the device current on this thread
  // count products, the i-th of b + b_offsets[i], a + a_offsets[i] into c + i * m * n (elements), or strided.
  auto gemm = [&](const void* bp, const void* ap, void* cp, int64_t stride_b, int64_t stride_a, int64_t count) {
    CheckCublas(Cublas().Gemm(h.handle, tb.op, ta.op, p.n, p.m, p.k, alpha, bp, type, tb.ld, stride_b, ap, type, ta.ld,
                              stride_a, beta, cp, type, std::max<int64_t>(p.n, 1), p.m * p.n, count, compute,
                              CUBLAS_GEMM_DEFAULT),
                what, device);
  };
  auto at = [&](const void* base, int64_t elements) { return static_cast<const char*>(base) + elements * esize; };
  if (p.batch.empty()) {
    gemm(b, a, c.raw_data(), 0, 0, 1);
  } else if (p.a_batch == p.b_batch) {
    gemm(b, a, c.raw_data(), p.k * p.n, p.m * p.k, Product(p.batch));
  } else {  // broadcast batch dims: one product per output matrix
    const std::vector<int64_t> a_off = BatchOffsets(p.batch, p.a_batch, p.m * p.k);
    const std::vector<int64_t> b_off = BatchOffsets(p.batch, p.b_batch, p.k * p.n);
    for (size_t i = 0; i < a_off.size(); ++i) {
      void* cp = const_cast<char*>(at(c.raw_data(), static_cast<int64_t>(i) * p.m * p.n));
      gemm(at(b, b_off[i]), at(a, a_off[i]), cp, 0, 0, 1);
    }
  }
}

}  // namespace

void RegisterMatmulKernels(OpRegistry& registry) {
  registry.AddKernel("matmul", {DeviceType::kCUDA, kFloatingTypes, MatmulKernelOf<RunGemm>});
  registry.AddKernel("linear", {DeviceType::kCUDA, kFloatingTypes, LinearKernelOf<RunGemm>});
}

}  // namespace oneflow::cuda
