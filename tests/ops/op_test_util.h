// The op conformance harness: random inputs, float64 reference comparison, non-contiguous views,
// finite-difference gradient checks, and the coverage ledger that checks every registered op x dtype
// was exercised (op_tests_main.cpp fails the run otherwise).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/autograd/autograd.h"
#include "core/op/op_registry.h"
#include "core/ops/ops.h"
#include "core/session/session.h"
#include "core/tensor/factory.h"

namespace oneflow::test {

// Records that op `name`'s kernel on `device` was checked against a reference with inputs of `dtype` (the
// kernel's dtype).
void MarkCovered(const std::string& name, Symbol<DType> dtype, DeviceType device = DeviceType::kCPU);
// Every "op x dtype" of `device`'s kernels that no test marked.
std::vector<std::string> UncoveredOps(DeviceType device);
// A conformance binary's main: runs every test, then (unless --gtest_filter chose some, when the ledger
// cannot be complete) fails the run if some op x dtype of `device`'s kernels was not covered.
int RunConformanceTests(int argc, char** argv, DeviceType device);

// float16, bfloat16, float32, float64: the kernel dtypes of every floating op (Note [Half precision in
// float32]).
const std::vector<Symbol<DType>>& FloatingDTypes();

// A deterministic generator for tests.
Generator& TestGenerator();

// Uniform values in [lo, hi) converted to `dtype` (integers: rounded down; bool: value >= mid).
TensorPtr RandomTensor(Symbol<DType> dtype, const Shape& shape, double lo = -2.0, double hi = 2.0);
TensorPtr FromDoubles(Symbol<DType> dtype, const Shape& shape, const std::vector<double>& values);
// Row-major element values as doubles, whatever the strides and dtype.
std::vector<double> ToDoubles(const TensorPtr& t);
// The same values in a non-contiguous layout (every other element of a wider storage).
TensorPtr NonContiguous(const TensorPtr& t);
// The same values laid out column-major (every stride reversed).
TensorPtr Transposed(const TensorPtr& t);
// A copy of a 4-D t laid out channels last (NHWC order; Note [Channels-last activations]).
TensorPtr ChannelsLast(const TensorPtr& t);
// t, and where they differ, its NonContiguous, Transposed and (4-D) ChannelsLast layouts.
std::vector<TensorPtr> Layouts(const TensorPtr& t);

// Shape, dtype and every value: |a - e| <= atol + rtol * |e|; NaNs must match NaNs.
void ExpectTensorNear(const TensorPtr& actual, Symbol<DType> dtype, const Shape& shape,
                      const std::vector<double>& expected, double rtol = 1e-6, double atol = 1e-6);
// Tolerances suited to a dtype computed from float64 references.
double RtolFor(Symbol<DType> dtype);
// A test's tolerance in `dtype` given its float32 and float64 ones: float16 and bfloat16 are computed in
// float32 and rounded once (Note [Half precision in float32]), so theirs is float32's plus RtolFor.
double TolFor(Symbol<DType> dtype, double f32, double f64);

// Exact values as stored in floating `dtype` (rounded; beyond its range infinite, below it zero).
std::vector<double> RoundedTo(Symbol<DType> dtype, const std::vector<double>& values);
// What an exact result v becomes in `dtype`: integers wrap modulo 2^bits (NaN gives 0), bool is v != 0.
double InDType(double v, Symbol<DType> dtype);
// An absolute tolerance for `dtype`: RtolFor(dtype), at least 1e-6.
double AtolFor(Symbol<DType> dtype);

// A TCP port on 127.0.0.1 that was free a moment ago (for tcp:// rendezvous in tests).
int FreeTcpPort();

// Row-major index helpers for reference loops.
std::vector<int64_t> Unravel(int64_t flat, const Shape& shape);
int64_t Ravel(const std::vector<int64_t>& index, const Shape& shape);
// The flat index in `from` (broadcast to `to`) of the element at `index` of `to`.
int64_t BroadcastIndex(const std::vector<int64_t>& index, const Shape& from, const Shape& to);

// f at every element of `out`, its arguments read from the tensors *in[k] broadcast to `out`.
std::vector<double> BroadcastRef(const Shape& out, const std::vector<const TensorPtr*>& in,
                                 const std::function<double(const std::vector<double>&)>& f);

// fn() must throw oneflow::Error with `code` (InvalidArgument when not given) and a message containing
// every one of `parts`.
void ExpectError(const std::function<void()>& fn, StatusCode code, const std::vector<std::string>& parts);
void ExpectError(const std::function<void()>& fn, const std::vector<std::string>& parts);

// Checks fn's gradients w.r.t. every input that requires grad against central finite differences of
// <fn(x), w> for a random w. Inputs should be float64 leaves. Returns after EXPECTs.
void ExpectGradientsMatch(const std::function<TensorPtr(const std::vector<TensorPtr>&)>& fn,
                          const std::vector<TensorPtr>& inputs, double eps = 1e-6, double tol = 1e-6);

}  // namespace oneflow::test
