// Saving and loading named tensors in the safetensors format (https://github.com/huggingface/safetensors),
// which PyTorch, JAX and the Hugging Face tools read and write:
//
//   8 bytes   N, the header size, unsigned little-endian
//   N bytes   UTF-8 JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//             "__metadata__": {"key": "value", ...}}, padded with spaces (here: to a multiple of 8)
//   the rest  the tensors' row-major little-endian bytes; data_offsets are relative to the start of
//             this section and the tensors tile it exactly (no gaps, no overlaps, nothing after).
// Dtypes: BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64.
//
// Errors name the file. A malformed or truncated file is DataLoss (the problem and the byte or
// tensor where it was found); a valid file with a dtype this library lacks is InvalidArgument; a file
// that cannot be opened is NotFound or PermissionDenied (others: Unavailable).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/device/device.h"
#include "core/tensor/tensor.h"

namespace oneflow::safetensors {

using NamedTensors = std::vector<std::pair<std::string, TensorPtr>>;
using Metadata = std::vector<std::pair<std::string, std::string>>;

// Writes `tensors` in the given order (any layout and device) with the optional string metadata.
// Names must be non-empty, distinct, valid UTF-8 and not "__metadata__"; metadata keys distinct and
// valid UTF-8 (InvalidArgument naming the entry otherwise). The file is written next to `path` under a
// temporary name and renamed over it, so a failed save leaves any existing file as it was.
void Save(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});

// The file's tensors, in the order of their data in the file, as new contiguous tensors on `device`;
// the file's metadata into *metadata when given (in header order).
NamedTensors Load(const std::string& path, Device device = Device::CPU(), Metadata* metadata = nullptr);

// Copies the file's tensors into existing tensors with the same names (any layout; CPU, or contiguous
// on another device), which must have the file's dtype and shape (InvalidArgument naming the tensor
// and both dtypes and shapes). With `strict`, every target must be in the file (NotFound otherwise)
// and every tensor in the file must be a target (InvalidArgument); without it, only the names present
// in both are copied. Target names must be distinct. Everything is checked and read before the first
// target is written, so a failed call changes no target.
void LoadInto(const std::string& path, const NamedTensors& targets, bool strict = true);

}  // namespace oneflow::safetensors
