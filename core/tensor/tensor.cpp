#include "core/tensor/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace oneflow {

TensorPtr Tensor::Make(std::shared_ptr<Storage> storage, Symbol<DType> dtype, Shape shape, MemoryFormat format) {
  CheckStatic(shape, "tensor shape");
  TensorPtr t(new Tensor());
  t->numel_ = shape.numel();
  OF_CHECK_INTERNAL(static_cast<size_t>(t->numel_) * dtype->bytes() <= storage->nbytes())
      << "storage of " << storage->nbytes() << " bytes is too small for " << dtype << " " << shape;
  t->strides_ = StridesFor(shape, format);
  t->device_ = storage->device();
  t->storage_ = std::move(storage);
  t->dtype_ = dtype;
  t->shape_ = std::move(shape);
  return t;
}

TensorPtr Tensor::MakeView(const Tensor& base, Shape shape, std::vector<int64_t> strides, int64_t storage_offset) {
  OF_CHECK_INTERNAL(static_cast<int64_t>(strides.size()) == shape.ndim()) << "view rank mismatch";
  TensorPtr t(new Tensor());
  t->numel_ = shape.numel();
  t->device_ = base.device_;
  t->lazy_graph_ = base.lazy_graph_;
  t->lazy_value_ = base.lazy_value_;
  t->storage_ = base.storage_;
  t->dtype_ = base.dtype_;
  t->shape_ = std::move(shape);
  t->strides_ = std::move(strides);
  // An empty view addresses no element, so its offset is 0: a narrow of an empty tensor can compute
  // an offset beyond the storage, whose byte offset would overflow (found by fuzz_ops).
  t->storage_offset_ = t->numel_ == 0 ? 0 : storage_offset;
  return t;
}

TensorPtr Tensor::MakeLazy(uint64_t graph_id, int32_t value, Symbol<DType> dtype, Shape shape, Device device) {
  OF_CHECK_INTERNAL(graph_id != 0 && value >= 0) << "lazy tensor without a graph value";
  TensorPtr t(new Tensor());
  t->numel_ = shape.is_static() ? shape.numel() : -1;
  t->strides_ = shape.is_static() ? ContiguousStrides(shape) : std::vector<int64_t>(static_cast<size_t>(shape.ndim()), 0);
  t->dtype_ = dtype;
  t->shape_ = std::move(shape);
  t->device_ = device;
  t->lazy_graph_ = graph_id;
  t->lazy_value_ = value;
  return t;
}

TensorPtr Tensor::Detach() const {
  if (is_lazy()) return MakeLazy(lazy_graph_, lazy_value_, dtype_, shape_, device_);
  return MakeView(*this, shape_, strides_, storage_offset_);
}

bool Tensor::is_contiguous() const {
  if (is_lazy()) return true;  // lazy values are materialised contiguous
  return IsDenseIn(shape_, strides_, MemoryFormat::kContiguous);
}

MemoryFormat Tensor::memory_format() const {
  if (is_lazy() || Canonical(shape_, MemoryFormat::kChannelsLast) != MemoryFormat::kChannelsLast ||
      !IsDenseIn(shape_, strides_, MemoryFormat::kChannelsLast)) {
    return MemoryFormat::kContiguous;
  }
  return MemoryFormat::kChannelsLast;
}

void Tensor::set_requires_grad(bool requires_grad) {
  OF_CHECK(is_leaf()) << "requires_grad can only be changed on a leaf tensor; this tensor was computed by an op "
                         "(use detach() to get a leaf)";
  OF_CHECK(!requires_grad || dtype_->is_floating_point())
      << "only floating-point tensors can require gradients, got " << dtype_;
  requires_grad_ = requires_grad;
}

void Tensor::SetGradFn(std::shared_ptr<GradNode> node, int32_t output_nr) {
  grad_fn_ = std::move(node);
  output_nr_ = output_nr;
  requires_grad_ = true;
}

namespace {
std::mutex graph_names_mutex;
std::unordered_map<uint64_t, std::string>& GraphNames() {
  static auto* names = new std::unordered_map<uint64_t, std::string>();  // never destroyed: used at exit
  return *names;
}
}  // namespace

void RegisterGraphName(uint64_t graph_id, std::string name) {
  std::lock_guard<std::mutex> lock(graph_names_mutex);
  if (name.empty()) {
    GraphNames().erase(graph_id);
  } else {
    GraphNames()[graph_id] = std::move(name);
  }
}

std::string GraphLabel(uint64_t graph_id) {
  std::lock_guard<std::mutex> lock(graph_names_mutex);
  auto it = GraphNames().find(graph_id);
  return it != GraphNames().end() ? "graph " + QuoteString(it->second) : "graph " + std::to_string(graph_id) + " (destroyed)";
}

bool Tensor::has_internal_overlap() const {
  // Sorted by stride, a layout is free of overlap when each stride steps past everything the smaller
  // strides reach (exact for every layout the view ops make; conservative for exotic ones).
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims with size > 1
  for (int64_t d = 0; d < ndim(); ++d) {
    const int64_t size = shape_[d].value();
    if (size == 0) return false;  // no elements at all
    if (size > 1) dims.emplace_back(std::abs(strides_[static_cast<size_t>(d)]), size);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;  // the largest offset the dims before this one address
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += stride * (size - 1);
  }
  return false;
}

namespace {
// [first, last] element offsets a tensor addresses in its storage; empty (first > last) for no elements.
std::pair<int64_t, int64_t> AddressedRange(const Tensor& t) {
  int64_t low = t.storage_offset(), high = t.storage_offset();
  for (int64_t d = 0; d < t.ndim(); ++d) {
    const int64_t size = t.shape()[d].value();
    if (size == 0) return {1, 0};
    const int64_t step = t.strides()[static_cast<size_t>(d)] * (size - 1);
    (step < 0 ? low : high) += step;
  }
  return {low, high};
}
}  // namespace

bool MayShareMemory(const Tensor& a, const Tensor& b) {
  if (!a.storage() || a.storage() != b.storage()) return false;
  const auto [a_first, a_last] = AddressedRange(a);
  const auto [b_first, b_last] = AddressedRange(b);
  if (a_first > a_last || b_first > b_last) return false;
  const auto ia = static_cast<int64_t>(a.dtype()->bytes()), ib = static_cast<int64_t>(b.dtype()->bytes());
  return a_first * ia < (b_last + 1) * ib && b_first * ib < (a_last + 1) * ia;
}

void CheckWritable(const Tensor& t, std::string_view what) {
  CheckEager(t, what);
  if (t.storage()->read_only()) {
    OF_THROW(InvalidArgument) << what << " (" << t.dtype() << " " << t.shape() << ") is read-only memory (imported "
                              << "from DLPack with the READ_ONLY flag): it cannot be written in place; write a copy";
  }
  if (t.has_internal_overlap()) {
    OF_THROW(InvalidArgument) << what << " (" << t.dtype() << " " << t.shape() << ", strides ("
                              << fmt::format("{}", fmt::join(t.strides(), ", ")) << ")) has elements that share memory "
                              << "(e.g. an expanded view): writing it would keep one value of several; write a "
                                 "contiguous tensor (of_contiguous) instead";
  }
}

void CheckEager(const Tensor& t, std::string_view what) {
  if (t.is_lazy()) {
    OF_THROW(FailedPrecondition) << what << " is a lazy tensor (a value of " << GraphLabel(t.lazy_graph()) << ", shape "
                                 << t.shape() << "): it has no data; run the graph and use its outputs";
  }
}

}  // namespace oneflow
