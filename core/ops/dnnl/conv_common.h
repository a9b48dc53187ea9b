// Convolution pieces shared by conv2d / conv3d (conv.cpp, which defines them) and fused_conv_bn_act
// (fused_conv.cpp): attribute parsing, the geometry of one call, and the float32 oneDNN forward
// primitive with its operands. Private to core/ops/dnnl/.
//
// One geometry serves both spatial ranks: a 2-D convolution is a 3-D one of depth 1 (d = kd = od = 1,
// stride / padding / dilation 1 / 0 / 1 in depth), and oneDNN sees 4-D descriptors for it, 5-D ones only
// for 3-D inputs.
#pragma once

#include "core/ops/dnnl/dnnl_common.h"

namespace oneflow {
namespace dnnl_util {

// The attributes stride, padding, dilation and groups of conv2d (rank 2: two values each, and conv2d's
// padding_end) or conv3d (rank 3: three values each, (D, H, W); padding symmetric).
struct ConvParams {
  int rank = 2;
  Window2d win;  // (H, W)
  int64_t depth_stride = 1, depth_padding = 0, depth_dilation = 1;
  int64_t groups = 1;
};
// InvalidArgument naming the attribute if one is out of range.
ConvParams ConvParamsOf(const Attrs& attrs, int rank = 2);

// The concrete sizes of one convolution: x (n, c, [d,] h, w), weight (o, c / g, [kd,] kh, kw),
// y (n, o, [od,] oh, ow); 2-D ones have depth 1.
struct ConvGeom {
  int64_t n, c, h, w, o, kh, kw, oh, ow, g;
  Window2d win;
  bool is3d = false;
  int64_t d = 1, kd = 1, od = 1, sd = 1, pd = 0, dd = 1;  // depth sizes, stride, padding, dilation
  // The data (x, y and their gradients) is NHWC (ChannelsLastCall): oneDNN runs on it as it is, where
  // plain NC(D)HW data is reordered to the layout oneDNN picks and back.
  bool channels_last = false;
  int64_t cg() const { return c / g; }
  int64_t og() const { return o / g; }
};
// For kernels: x and w have concrete shapes that inference has checked; the rank is x's.
ConvGeom ConvGeomOf(const Tensor& x, const Tensor& w, const Attrs& attrs);

// oneDNN dims of x, y and the weight (grouped (g, o / g, c / g, [kd,] kh, kw) when g > 1).
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

// The descriptors of data with `dims` (SrcDims or DstDims): the tensors' own (UserData: NHWC or plain)
// and the primitive's (PrimData: NHWC, or the layout oneDNN picks for plain data).
memory::desc UserData(const ConvGeom& g, const memory::dims& dims);
memory::desc PrimData(const ConvGeom& g, const memory::dims& dims);

// Forward descriptor (data in PrimData, weights in the layout oneDNN picks), with a plain (o) bias if
// `bias`.
dnnl::convolution_forward::desc ConvFwdDesc(const ConvGeom& g, dnnl::prop_kind prop, bool bias);

// A forward primitive with reorders from and to the tensors' x, weight and y where layouts differ.
struct ConvFwdEntry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  Operand src, weights, dst;
};
ConvFwdEntry MakeConvFwdEntry(const ConvGeom& g, const dnnl::convolution_forward::primitive_desc& pd);
// Runs `e` on x, w, y (in UserData layouts) and a plain (o) bias (null if the primitive has none); waits.
// The weight's reorder may run on `pool` (Operand::Prepare).
void RunConvFwd(const ConvFwdEntry& e, const ConvGeom& g, dnnl::stream& stream, ThreadPool& pool, void* x, void* w,
                void* bias, void* y);

}  // namespace dnnl_util
}  // namespace oneflow
