// The op families, each registering its OpDefs into the registry (called once by OpRegistry::Global).
#pragma once

namespace oneflow {
class OpRegistry;

void RegisterCreationOps(OpRegistry& registry);     // core/ops/creation.cpp: full_like
void RegisterElementwiseOps(OpRegistry& registry);  // core/ops/elementwise.cpp, unary.cpp
void RegisterReduceOps(OpRegistry& registry);       // core/ops/reduce.cpp
void RegisterNnOps(OpRegistry& registry);           // core/ops/nn.cpp: softmax, losses, dropout
void RegisterAttentionOps(OpRegistry& registry);   // core/ops/attention.cpp: scaled_dot_product_attention
void RegisterLossOps(OpRegistry& registry);        // core/ops/losses.cpp: mse, l1, smooth_l1, bce with logits, kl_div
void RegisterRecurrentOps(OpRegistry& registry);   // core/ops/recurrent.cpp: lstm_cell, gru_cell pointwise parts
void RegisterViewOps(OpRegistry& registry);         // core/ops/view.cpp: views, cat, stack, contiguous
void RegisterDnnlOps(OpRegistry& registry);         // core/ops/dnnl/: matmul, conv2d, batch_norm, pooling
void RegisterFusedOps(OpRegistry& registry);        // core/ops/fused.cpp, dnnl/fused_conv.cpp: graph fusions
void RegisterOptimizerOps(OpRegistry& registry);    // core/train/optimizer_ops.cpp: parameter updates
void RegisterIndexingOps(OpRegistry& registry);     // core/ops/indexing.cpp: embedding, gather/scatter, ...
void RegisterExtraReduceOps(OpRegistry& registry);  // core/ops/reduce_extra.cpp: prod, logsumexp, all, any, norm
void RegisterScanOps(OpRegistry& registry);         // core/ops/scan.cpp: cumsum, cumprod
void RegisterNormalizationOps(OpRegistry& registry);  // core/ops/normalization.cpp: layer/group/instance norm
void RegisterMathOps(OpRegistry& registry);         // core/ops/math_unary.cpp, math_binary.cpp
void RegisterConvolutionOps(OpRegistry& registry);  // core/ops/dnnl/conv_transpose.cpp: conv_transpose2d
void RegisterResampleOps(OpRegistry& registry);     // core/ops/pad.cpp, resample.cpp: pad, interpolate, pixel_shuffle
void RegisterCollectiveOps(OpRegistry& registry);   // core/dist/collective_ops.cpp: all_reduce, broadcast, all_gather
// The CUDA backend's kernels for ops registered above (core/ops/cuda/; builds with OF_WITH_CUDA).
void RegisterCudaKernels(OpRegistry& registry);
}  // namespace oneflow
