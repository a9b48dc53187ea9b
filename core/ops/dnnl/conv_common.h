// Convolution pieces shared by conv2d (conv.cpp, which defines them) and fused_conv_bn_act
// (fused_conv.cpp): attribute parsing, the geometry of one call, and the float32 oneDNN forward
// primitive with its operands. Private to core/ops/dnnl/.
#pragma once

#include "core/ops/dnnl/dnnl_common.h"

namespace oneflow {
namespace dnnl_util {

// conv2d's attributes stride, padding, dilation and groups.
struct ConvParams {
  Window2d win;
  int64_t groups = 1;
};
// InvalidArgument naming the attribute if one is out of range.
ConvParams ConvParamsOf(const Attrs& attrs);

// The concrete sizes of one convolution: x (n, c, h, w), weight (o, c / g, kh, kw), y (n, o, oh, ow).
struct ConvGeom {
  int64_t n, c, h, w, o, kh, kw, oh, ow, g;
  Window2d win;
  int64_t cg() const { return c / g; }
  int64_t og() const { return o / g; }
};
// For kernels: x and w have concrete shapes that inference has checked.
ConvGeom ConvGeomOf(const Tensor& x, const Tensor& w, const Attrs& attrs);

// oneDNN dims of x, y and the weight (grouped (g, o / g, c / g, kh, kw) when g > 1).
memory::dims SrcDims(const ConvGeom& g);
memory::dims DstDims(const ConvGeom& g);
memory::dims WeightDims(const ConvGeom& g);

// Whether oneDNN runs this convolution: it refuses empty operands and checks its descriptors in int
// (FitsDnnl). The float32 kernels run the loops for the rest.
bool DnnlRuns(const ConvGeom& g);

// Multiply-adds / 8 (the `work` of PrepareExec).
int64_t ConvWork(const ConvGeom& g);
// Primitive-cache key: the thread count, `kind` (which primitive, within one cache), the geometry, `flag`.
Key ConvKey(const Exec& exec, int64_t kind, const ConvGeom& g, bool flag);

// Forward descriptor in the layouts oneDNN picks, with a plain (o) bias if `bias`.
dnnl::convolution_forward::desc ConvFwdDesc(const ConvGeom& g, dnnl::prop_kind prop, bool bias);

// A forward primitive with reorders from and to plain NCHW x, weight and y.
struct ConvFwdEntry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  Operand src, weights, dst;
};
ConvFwdEntry MakeConvFwdEntry(const ConvGeom& g, const dnnl::convolution_forward::primitive_desc& pd);
// Runs `e` on plain x, w, y and a plain (o) bias (null if the primitive has none); waits for it.
void RunConvFwd(const ConvFwdEntry& e, const ConvGeom& g, dnnl::stream& stream, void* x, void* w, void* bias,
                void* y);

}  // namespace dnnl_util
}  // namespace oneflow
