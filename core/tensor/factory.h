// Creating eager tensors. Every function here needs a concrete (static) shape and reports a shape
// that is not concrete, a dtype that cannot hold the requested values, or a size mismatch as an
// InvalidArgument error; callers (the C boundary, ops) prefix the message with their own name.
#pragma once

#include <string_view>

#include "core/device/thread_pool.h"
#include "core/session/generator.h"
#include "core/tensor/tensor.h"

namespace oneflow {

// Uninitialised memory, for a writer that sets every element (a kernel's output); of_tensor_empty
// hands bool tensors out zeroed (Note [Bool bytes]).
// `format` lays a 4-D tensor out channels last (Note [Channels-last activations]).
TensorPtr Empty(Symbol<DType> dtype, const Shape& shape, Device device, MemoryFormat format = MemoryFormat::kContiguous);
// Every element `value`, which must be representable in `dtype` (CheckRepresentable).
TensorPtr Full(Symbol<DType> dtype, const Shape& shape, double value, Device device);
// A copy of `nbytes` of host memory, which must equal the tensor's size. Bool data must hold only the
// bytes 0 and 1 (Note [Bool bytes]), as must adopted memory.
TensorPtr FromHost(Symbol<DType> dtype, const Shape& shape, const void* data, size_t nbytes, Device device);
// A CPU tensor over caller-owned memory, which is not copied; `deleter` runs exactly once — when the
// last reference goes, or before this function returns if it fails. `data` must be aligned to the
// dtype's size and hold exactly `nbytes` == the tensor's size.
TensorPtr AdoptHost(Symbol<DType> dtype, const Shape& shape, void* data, size_t nbytes,
                    Storage::Deleter deleter);
// A CPU tensor over caller-owned memory laid out with `strides` (in elements, each >= 0; a stride
// of 0 repeats an element) from `first`, the address of element (0, ..., 0); not copied. `deleter`
// runs exactly once, as for AdoptHost. `first` must be aligned to the dtype's size, and bool
// elements must be 0 or 1. With `read_only`, in-place writers refuse the tensor (CheckWritable). The
// DLPack import.
TensorPtr AdoptStridedHost(Symbol<DType> dtype, const Shape& shape, const std::vector<int64_t>& strides, void* first,
                           Storage::Deleter deleter, bool read_only);
// Uniform in [0, 1) and standard normal, from the generator; floating dtypes only. Element i comes
// from the generator's counter (start + i), so the result is the same whatever `pool` (may be null)
// and however many threads it has.
TensorPtr Rand(Generator& gen, Symbol<DType> dtype, const Shape& shape, Device device, ThreadPool* pool = nullptr);
TensorPtr Randn(Generator& gen, Symbol<DType> dtype, const Shape& shape, Device device, ThreadPool* pool = nullptr);
// start, start + step, ... while below `end` (above, for a negative step): ceil((end - start) / step)
// elements. step must be non-zero with the sign of end - start; integer dtypes need integral values.
TensorPtr Arange(double start, double end, double step, Symbol<DType> dtype, Device device);

// Note [Bool bytes]
// Kernels read a bool element as a C++ bool, for which a byte other than 0 or 1 is undefined
// behaviour (UBSan reports it; optimised code may treat such a value as both true and false). So
// every bool tensor holds only 0 and 1: kernels write only those (Convert), and the ways user bytes
// come in check them — from_data and adopt_data (INVALID_ARGUMENT), safetensors (DATA_LOSS) — while
// of_tensor_empty zeroes bool memory instead of leaving it uninitialised. Checking costs one pass over bytes
// where the data arrives; reading every bool byte as `byte != 0` instead would cost each kernel.
// A new way in (DLPack import) must check too.

// The index of the first of the `n` bool elements at `data` whose byte is neither 0 nor 1, or -1.
int64_t FirstNonBooleanByte(const void* data, int64_t n);

// Copies the tensor's elements (row-major) into `dst`, which holds `nbytes` == the tensor's size.
void CopyToHost(const Tensor& tensor, void* dst, size_t nbytes);
// A new contiguous tensor on `device` with the tensor's dtype, shape and elements (a copy even on the
// same device). It has no autograd history.
TensorPtr CopyToDevice(const TensorPtr& tensor, Device device);

// Whether `value` converts to `dtype` without loss of meaning: integral and in range for integer
// dtypes, 0 or 1 for bool, finite-in-range or inf/nan for floating dtypes. CheckRepresentable throws
// InvalidArgument naming `what` where it does not.
bool IsRepresentable(double value, Symbol<DType> dtype);
void CheckRepresentable(double value, Symbol<DType> dtype, std::string_view what);
// The largest |z| that Randn can draw for `dtype` (a bound on every standard normal value).
double MaxStandardNormalDraw(Symbol<DType> dtype);

}  // namespace oneflow
