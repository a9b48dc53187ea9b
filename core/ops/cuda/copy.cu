// Strided copies on the device (Backend::CopyStrided): elements moved as 1, 2, 4 or 8-byte words.
#include "core/ops/cuda/index.cuh"
#include "core/ops/cuda/launch.h"

namespace oneflow::cuda {
namespace {

struct CopyLayout {
  int32_t ndim;
  int64_t sizes[kMaxDims], src_strides[kMaxDims], dst_strides[kMaxDims];
};

template <typename Word>
__global__ void StridedCopyKernel(Word* dst, const Word* src, int64_t n, CopyLayout l) {
  OF_CUDA_GRID_LOOP(i, n) {
    dst[StridedOffset(i, l.ndim, l.sizes, l.dst_strides)] = src[StridedOffset(i, l.ndim, l.sizes, l.src_strides)];
  }
}

template <typename Word>
void Launch(void* dst, const void* src, int64_t n, const CopyLayout& l, cudaStream_t stream) {
  StridedCopyKernel<Word>
      <<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<Word*>(dst), static_cast<const Word*>(src), n, l);
}

}  // namespace

void LaunchStridedCopy(void* dst, const void* src, int64_t element_size, int32_t ndim, const int64_t* sizes,
                       const int64_t* src_strides, const int64_t* dst_strides, cudaStream_t stream) {
  CopyLayout l{ndim, {}, {}, {}};
  int64_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    l.sizes[d] = sizes[d];
    l.src_strides[d] = src_strides[d];
    l.dst_strides[d] = dst_strides[d];
    n *= sizes[d];
  }
  if (n == 0) return;
  switch (element_size) {
    case 1:
      return Launch<uint8_t>(dst, src, n, l, stream);
    case 2:
      return Launch<uint16_t>(dst, src, n, l, stream);
    case 4:
      return Launch<uint32_t>(dst, src, n, l, stream);
    default:
      return Launch<uint64_t>(dst, src, n, l, stream);
  }
}

}  // namespace oneflow::cuda
