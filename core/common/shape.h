// Shape: an ordered list of Dims, and the shape functions that ops share.
//
// Equality of shapes is element-wise Dim equality (so (?, 4) == (?, 4), (N, 4) != (M, 4)); see dim.h.
// A shape is static when every dim is known; only static shapes have an element count.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/common/dim.h"

namespace oneflow {

class Shape {
 public:
  Shape() = default;  // the 0-d (scalar) shape
  Shape(std::initializer_list<Dim> dims) : dims_(dims) {}
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}
  // From C-ABI encodings; each dims[i] is validated (Dim::FromRaw) and errors name "<what>[i]".
  static Shape FromRaw(const int64_t* dims, size_t ndim, std::string_view what = "dims");

  int64_t ndim() const { return static_cast<int64_t>(dims_.size()); }
  Dim operator[](int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  Dim& operator[](int64_t i) { return dims_[static_cast<size_t>(i)]; }
  // Like operator[] but with a range check and Python-style negative indices.
  Dim At(int64_t i) const;

  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  const std::vector<Dim>& dims() const { return dims_; }
  // The encodings as int64_t, in place (Dim is one int64_t).
  std::span<const int64_t> raw() const {
    return {reinterpret_cast<const int64_t*>(dims_.data()), dims_.size()};
  }

  void push_back(Dim d) { dims_.push_back(d); }
  void insert(int64_t pos, Dim d) { dims_.insert(dims_.begin() + pos, d); }
  void erase(int64_t pos) { dims_.erase(dims_.begin() + pos); }

  bool is_static() const;
  // Number of elements (1 for a 0-d shape); InvalidArgument naming the shape if it is not static.
  int64_t numel() const;
  // Number of elements as a Dim, by Dim arithmetic: 0 if any dim is 0, else unknown when a dim is not
  // known — except that a single symbolic dim times known 1s stays that symbol. OutOfRange when the
  // known non-zero sizes multiply past int64 (even if another size is 0 or unknown).
  Dim numel_dim() const;
  std::string ToString() const;  // "(2, ?, N)", "()" for 0-d, "(3,)" for 1-d

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<Dim> dims_;
};

// InvalidArgument if `shape` is not static, naming `what` and the first dim that is not known:
// "dims (2, ?) is not concrete: dim 1 is unknown (OF_DIM_UNKNOWN), and a concrete size is required here".
void CheckStatic(const Shape& shape, std::string_view what);

// Row-major (C-contiguous) strides in elements for a static shape.
std::vector<int64_t> ContiguousStrides(const Shape& shape);

// `axis` in [-ndim, ndim) made non-negative; InvalidArgument naming `what` otherwise.
int64_t NormalizeAxis(int64_t axis, int64_t ndim, std::string_view what = "dim");

// NumPy broadcasting of two shapes over symbolic dims. Per aligned axis:
//   equal encodings (same size, same symbol, both unknown)  -> that dim
//   one side is the known 1                                 -> the other side
//   both known and different                                -> InvalidArgument naming both shapes
//   one side known k != 1, the other not known              -> k (checked when sizes are concrete)
//   otherwise (different symbols, symbol vs unknown)        -> unknown
Shape BroadcastShapes(const Shape& a, const Shape& b);

// Inserts a size-1 dim at `dim` (in [-(ndim+1), ndim+1)).
Shape UnsqueezeShape(const Shape& shape, int64_t dim);

// The shape after reducing over `axes` (each in [-ndim, ndim), no repeats; empty = all axes).
Shape ReduceShape(const Shape& shape, std::span<const int64_t> axes, bool keepdim);

// Binds named symbols (and checks unknown and known dims) against concrete sizes, as happens when a
// graph declared with symbolic inputs is run: every occurrence of a symbol must get the same size.
class ShapeBinding {
 public:
  // Checks `concrete` (static) against `declared` and records the sizes of its symbols.
  // InvalidArgument naming `what` for a rank mismatch, a known-size mismatch, or a symbol that was
  // already bound to a different size; a failed Bind records nothing.
  void Bind(const Shape& declared, const Shape& concrete, std::string_view what);
  // The concrete size of d: d itself if known, its bound size if it is a bound symbol, else d.
  Dim Resolve(Dim d) const;
  Shape Resolve(const Shape& shape) const;

 private:
  std::unordered_map<int64_t, int64_t> symbol_sizes_;  // raw symbol encoding -> size
};

}  // namespace oneflow

template <>
struct fmt::formatter<oneflow::Shape> : fmt::formatter<std::string_view> {
  auto format(const oneflow::Shape& s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.ToString(), ctx);
  }
};
