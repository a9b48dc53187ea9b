// Tensor: an eager tensor — a typed, shaped (strided) view of a Storage on one device — or a lazy
// tensor: a value of a graph being built (core/graph), with a possibly symbolic shape and no storage.
//
// Tensors are intrusively reference counted: IntrusivePtr<Tensor> in C++, of_tensor_retain/release
// in C, both on the same counter. The shape of an eager tensor is always static; a lazy tensor's dims
// may be unknown or named symbols, and it has no data (storage() is null, raw_data() must not be called:
// op dispatch and the C ABI refuse lazy tensors wherever data would be read). Shape, strides and
// dtype never change after creation, so concurrent reads of one tensor are safe; writing its data, or
// its autograd state (requires_grad, grad), while another thread uses it is the caller's race.
//
// Autograd state: a tensor made by a differentiable op from inputs that require grad has a grad_fn
// (the node that computes its inputs' gradients) and is a non-leaf; every other tensor is a leaf.
// Only leaves can be marked requires_grad by the user, and only leaves accumulate .grad.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/dtype.h"
#include "core/common/intrusive_ptr.h"
#include "core/common/memory_format.h"
#include "core/common/shape.h"
#include "core/tensor/storage.h"

namespace oneflow {

class Tensor;
using TensorPtr = IntrusivePtr<Tensor>;
class GradNode;  // core/autograd/autograd.h

class Tensor final : public RefCounted {
 public:
  // A dense tensor over `storage` from byte 0, laid out in `format` (row-major by default); the storage
  // must hold shape.numel() elements.
  static TensorPtr Make(std::shared_ptr<Storage> storage, Symbol<DType> dtype, Shape shape,
                        MemoryFormat format = MemoryFormat::kContiguous);
  // A view sharing `base`'s storage with its own shape, strides and offset (in elements); the caller
  // guarantees every element it addresses lies inside the storage. No autograd state is carried.
  static TensorPtr MakeView(const Tensor& base, Shape shape, std::vector<int64_t> strides, int64_t storage_offset);
  // A lazy tensor: value `value` of graph `graph_id`, with no storage.
  static TensorPtr MakeLazy(uint64_t graph_id, int32_t value, Symbol<DType> dtype, Shape shape, Device device);
  // The same data and metadata without autograd state (a new leaf that does not require grad).
  TensorPtr Detach() const;

  bool is_lazy() const { return lazy_graph_ != 0; }
  uint64_t lazy_graph() const { return lazy_graph_; }  // 0 for eager tensors
  int32_t lazy_value() const { return lazy_value_; }

  Symbol<DType> dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t ndim() const { return shape_.ndim(); }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements
  int64_t storage_offset() const { return storage_offset_; }        // in elements
  int64_t numel() const { return numel_; }  // -1 for a lazy tensor whose shape is not static
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_->bytes(); }
  Device device() const { return device_; }
  bool is_contiguous() const;
  // kChannelsLast for a 4-D tensor dense in NHWC order whose strides are not also row-major
  // (Canonical), else kContiguous (also for tensors dense in neither order, and lazy ones).
  MemoryFormat memory_format() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // The version of the storage (Note [Version counter] in storage.h); 0 for a lazy tensor.
  uint64_t version() const { return storage_ ? storage_->version() : 0; }
  // Records an in-place write of the tensor's data (bumps the shared storage's version).
  void MarkWritten() const {
    if (storage_) storage_->BumpVersion();
  }
  // True when two different indices may address the same element (a size > 1 dim with stride 0, as
  // expand makes, or strides that interleave): writing such a tensor loses values.
  bool has_internal_overlap() const;

  // First element. Only meaningful on the device that holds it.
  void* raw_data() const {
    return static_cast<char*>(storage_->data()) + storage_offset_ * static_cast<int64_t>(dtype_->bytes());
  }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }

  // --- autograd ---
  bool requires_grad() const { return requires_grad_; }
  // Leaves only, floating dtypes only (InvalidArgument otherwise).
  void set_requires_grad(bool requires_grad);
  bool is_leaf() const { return grad_fn_ == nullptr; }
  // The accumulated gradient of a leaf (null until a backward reaches it).
  const TensorPtr& grad() const { return grad_; }
  void set_grad(TensorPtr grad) { grad_ = std::move(grad); }
  const std::shared_ptr<GradNode>& grad_fn() const { return grad_fn_; }
  int32_t output_nr() const { return output_nr_; }  // which output of grad_fn this tensor is
  // Makes this tensor output `output_nr` of `node` (used by op dispatch when it records autograd).
  void SetGradFn(std::shared_ptr<GradNode> node, int32_t output_nr);

 private:
  Tensor() = default;

  std::shared_ptr<Storage> storage_;
  Symbol<DType> dtype_;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;
  Device device_;
  uint64_t lazy_graph_ = 0;
  int32_t lazy_value_ = -1;

  bool requires_grad_ = false;
  TensorPtr grad_;
  std::shared_ptr<GradNode> grad_fn_;
  int32_t output_nr_ = 0;
};

// Names of live graphs by id, for messages about lazy tensors: core/graph registers each graph (an
// empty name unregisters). GraphLabel gives "graph 'train'", or "graph 7 (destroyed)".
void RegisterGraphName(uint64_t graph_id, std::string name);
std::string GraphLabel(uint64_t graph_id);

// FailedPrecondition naming `what` if `t` is lazy: a graph's value has no data until the graph runs.
void CheckEager(const Tensor& t, std::string_view what);
// Whether the byte ranges that a and b address in one storage intersect (NumPy's may_share_memory: a
// bound check, so views that interleave without touching one element count as sharing).
bool MayShareMemory(const Tensor& a, const Tensor& b);

// What every in-place writer checks of its destination: eager (CheckEager), writable memory (not a
// read-only DLPack import) and no internal overlap (InvalidArgument naming `what`: a write would keep
// only one of the values aimed at an element).
void CheckWritable(const Tensor& t, std::string_view what);

}  // namespace oneflow
