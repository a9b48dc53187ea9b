// Winograd F(2x2, 3x3) convolutions: float32 3x3 convolutions of stride 1 (and of stride 2, by the phases of
// x) on channels-last (NHWC) data, forward and both backwards, with AVX2 and FMA (AVX-512 for the tiles
// and products where the CPU has it). conv2d's float32 kernels call them where WinogradRuns
// (core/ops/dnnl/conv.cpp) and oneDNN otherwise.
//
// Note [Winograd convolutions]
// oneDNN's direct kernels run the 3x3 convolutions of the main job and of ResNets at 60-95% of the FMA
// peak (oneDNN 2.6.3 has Winograd kernels only for AVX-512, F(4x4, 3x3): see below), so only fewer
// multiplications make them faster. F(2x2, 3x3) computes each 2x2 output tile from a 4x4 input tile with
// 16 products per (input, output) channel pair where the direct convolution needs 36 (2.25x fewer):
//   Y = A^T [(G g G^T) . (B^T d B)] A          (. elementwise, summed over input channels)
// The 16 elementwise products become 16 matrix products over the channels (tiles x C times C x K), run by
// one register-blocked kernel. The backward data is the same convolution of grad_y with the kernel
// rotated by 180 degrees and the channels swapped (padding 2 - p); the weight gradient differentiates
// the formula: dL/dg = G^T [sum over tiles of (B^T d B) . (A dY A^T)] G, a product over the tiles.
// F(2x2, 3x3)'s transforms have coefficients 0, +-1 and 1/2 only: the results differ from the direct
// convolution's by a few float32 roundings (the conformance tests compare with float64 loops). F(4x4,
// 3x3) (4x fewer products; coefficients up to 64 and 1/24) was measured 1.4x faster still at 16
// channels, but its float32 results were off by up to 1e-3 of the largest terms, beyond what the
// conformance tests accept of a float32 convolution; it is not used. Nor is F(4x2, 3x3) (F(4, 3) along
// rows only, 1.33x fewer products than F(2x2, 3x3)): at 128 and 256 channels its errors on outputs near
// zero were 1.4-2.4 times the conformance tests' 2e-4 (4x F(2x2, 3x3)'s), at 64 channels half of it.
//
// Note [Winograd convolutions of stride 2]
// A stride-2 3x3 convolution is the sum of four stride-1 ones over the phases of x (padded): rows and
// columns of one parity each, x[a::2, b::2], convolved with the kernel's taps of the same parities, a 2x2,
// 2x1, 1x2 and 1x1 kernel. A 2x2 output tile takes, per (input, output) channel pair, F(2x2, 2x2) (9
// products) for the first, F(2, 2) along one axis for the next two (6 each) and the 4 direct products of
// the last: 25 products where the direct convolution needs 36 (1.44x fewer). Their transforms have
// coefficients 0 and +-1 only, and the 25 positions multiply 16 weight matrices (as many as stride 1's;
// the positions of one matrix form one product). The backward data tiles dx in 2x2 blocks of each phase,
// each a correlation of dy with its phase's taps rotated; the weight gradient sums the products per
// matrix before their inverse transform. ResNet-50's stride-2 3x3 convolutions of 128 and 256 channels
// at batch 4 (2 threads, AVX-512 EPYC, in the training step): forward 4.14 / 4.25 -> 3.5 / 3.7 ms,
// backward data 4.15 / 4.14 -> 3.4 / 3.6, weight gradient 5.1 / 4.6 -> 4.1 / 4.3-4.6 (the 512-channel
// one's forward and backward data stay on oneDNN, see WinogradRuns).
//
// AVX-512 CPUs run them too: there the direct kernels are at most twice as wide, and on CPUs that split
// 512-bit operations in two (AMD's Zen 4) not faster at all; ResNet-50's training step at batch 16 took
// 7% less time with them (2254 against 2100 ms) on such a CPU, before the products had an AVX-512 kernel.
//
// OF_WINOGRAD=0 in the environment turns these kernels off (every convolution runs oneDNN's), for
// benchmarks that compare the two; OF_WINOGRAD=avx2 keeps them on AVX2 on an AVX-512 CPU.
#pragma once

#include <cstdint>

#include "core/device/thread_pool.h"

namespace oneflow::cpu {

// One 3x3 convolution of stride 1 or 2, dilation 1 and one group: x (n, h, w, c) and y (n, oh, ow, o) NHWC
// float32 (dense), weight (o, c, 3, 3) plain; padding (pad_top, pad_left) at the start, the end padding
// follows from oh and ow.
struct Winograd3x3 {
  int64_t n, c, h, w, o, oh, ow, pad_top, pad_left;
  int64_t stride;  // 1, or 2 in both dimensions (Note [Winograd convolutions of stride 2])
};

// Whether the Winograd kernels run `s`: an x86 CPU with AVX2 and FMA, c and o multiples of 8 (AVX2's
// vectors' width) from 16 to 256 (to 512 over at least 64 tiles of 2x2 outputs), stride 1 or 2, each
// padding in [0, 2] (for stride 1 the end paddings too), and at least 64 outputs per channel, unless
// OF_WINOGRAD=0.
bool WinogradRuns(const Winograd3x3& s);

// y = conv2d(x, w) + bias (bias: o values, or null). Overwrites y.
void WinogradForward(const Winograd3x3& s, const float* x, const float* w, const float* bias, float* y,
                     ThreadPool& pool);
// dx = the gradient of conv2d(x, w) with respect to x for its output gradient dy. Overwrites dx.
void WinogradBackwardData(const Winograd3x3& s, const float* dy, const float* w, float* dx, ThreadPool& pool);
// dw (o, c, 3, 3) = the gradient with respect to the weight. Overwrites dw.
void WinogradBackwardWeight(const Winograd3x3& s, const float* x, const float* dy, float* dw, ThreadPool& pool);

}  // namespace oneflow::cpu
