// The oneDNN op family: matmul, linear, conv2d, batch_norm, pooling, max_unpool2d (see dnnl_common.h).
#include "core/ops/dnnl/dnnl_common.h"
#include "core/ops/register.h"

namespace oneflow {

void RegisterDnnlOps(OpRegistry& registry) {
  RegisterMatmulOps(registry);
  RegisterConvOps(registry);
  RegisterBatchNormOps(registry);
  RegisterPoolingOps(registry);
  RegisterMaxUnpoolOps(registry);
}

}  // namespace oneflow
