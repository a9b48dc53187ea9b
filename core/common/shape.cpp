#include "core/common/shape.h"

#include <algorithm>
#include <limits>

#include "core/common/error.h"

namespace oneflow {

Shape Shape::FromRaw(const int64_t* dims, size_t ndim, std::string_view what) {
  OF_CHECK(dims != nullptr || ndim == 0) << what << " is NULL but ndim is " << ndim;
  std::vector<Dim> v;
  v.reserve(ndim);
  for (size_t i = 0; i < ndim; ++i) v.push_back(Dim::FromRaw(dims[i], fmt::format("{}[{}]", what, i)));
  return Shape(std::move(v));
}

Dim Shape::At(int64_t i) const { return dims_[NormalizeAxis(i, ndim(), "index")]; }

bool Shape::is_static() const {
  return std::all_of(dims_.begin(), dims_.end(), [](Dim d) { return d.is_known(); });
}

int64_t Shape::numel() const {
  CheckStatic(*this, "shape");
  return numel_dim().value();
}

Dim Shape::numel_dim() const {
  // One rule whatever the order of the dims: the known sizes other than 0 must multiply within int64
  // even when a 0 makes the count 0 or an unknown dim makes it unknown (so (2^62, 2^62, 0),
  // (0, 2^62, 2^62) and (?, 2^62, 2^62) are refused alike: no concrete shape they stand for is valid,
  // and every stride of a valid shape is representable).
  Dim n = 1;
  int64_t known_product = 1;
  bool empty = false;
  for (Dim d : dims_) {
    if (d == 0) {
      empty = true;
      continue;
    }
    if (d.is_known() && __builtin_mul_overflow(known_product, d.value(), &known_product)) {
      OF_THROW(OutOfRange) << "shape " << *this << " has too many elements: the product of its non-zero sizes "
                           << "overflows int64";
    }
    n = n * d;
  }
  return empty ? Dim(0) : n;
}

std::string Shape::ToString() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) s += ", ";
    s += dims_[i].ToString();
  }
  if (dims_.size() == 1) s += ",";
  s += ")";
  return s;
}

void CheckStatic(const Shape& shape, std::string_view what) {
  for (int64_t i = 0; i < shape.ndim(); ++i) {
    const Dim d = shape[i];
    if (d.is_known()) continue;
    OF_THROW(InvalidArgument) << what << " " << shape << " is not concrete: dim " << i << " is "
                              << (d.is_unknown() ? "unknown (OF_DIM_UNKNOWN)"
                                                 : fmt::format("the symbol '{}'", d.symbol_name()))
                              << ", and a concrete size is required here";
  }
}

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(static_cast<size_t>(shape.ndim()));
  int64_t stride = 1;
  for (int64_t i = shape.ndim() - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = stride;
    // Only an empty shape (a zero dim elsewhere) has dims whose product passes int64: its strides
    // address nothing, and they stop at INT64_MAX.
    if (__builtin_mul_overflow(stride, std::max<int64_t>(shape[i].value(), 1), &stride)) {
      stride = std::numeric_limits<int64_t>::max();
    }
  }
  return strides;
}

int64_t NormalizeAxis(int64_t axis, int64_t ndim, std::string_view what) {
  if (axis < -ndim || axis >= ndim || ndim == 0) {
    OF_THROW(InvalidArgument) << what << " " << axis << " is out of range for a tensor with " << ndim
                              << (ndim == 1 ? " dim" : " dims")
                              << (ndim == 0 ? "" : fmt::format(" (expected {}..{})", -ndim, ndim - 1));
  }
  return axis < 0 ? axis + ndim : axis;
}

Shape BroadcastShapes(const Shape& a, const Shape& b) {
  const int64_t n = std::max(a.ndim(), b.ndim());
  std::vector<Dim> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ia = a.ndim() - n + i, ib = b.ndim() - n + i;
    const Dim da = ia >= 0 ? a[ia] : Dim(1);
    const Dim db = ib >= 0 ? b[ib] : Dim(1);
    Dim r;
    if (da == db || db == 1) {
      r = da;
    } else if (da == 1) {
      r = db;
    } else if (da.is_known() && db.is_known()) {
      OF_THROW(InvalidArgument) << "shapes " << a << " and " << b << " cannot be broadcast: size " << da
                                << " vs " << db << " at dim " << i;
    } else if (da.is_known()) {
      r = da;
    } else if (db.is_known()) {
      r = db;
    } else {
      r = Dim::Unknown();
    }
    out[static_cast<size_t>(i)] = r;
  }
  return Shape(std::move(out));
}

Shape UnsqueezeShape(const Shape& shape, int64_t dim) {
  Shape out = shape;
  out.insert(NormalizeAxis(dim, shape.ndim() + 1, "unsqueeze dim"), Dim(1));
  return out;
}

Shape ReduceShape(const Shape& shape, std::span<const int64_t> axes, bool keepdim) {
  std::vector<bool> reduced(static_cast<size_t>(shape.ndim()), axes.empty());
  for (int64_t axis : axes) {
    const int64_t a = NormalizeAxis(axis, shape.ndim(), "reduction dim");
    OF_CHECK(!reduced[static_cast<size_t>(a)]) << "reduction dim " << axis << " appears more than once";
    reduced[static_cast<size_t>(a)] = true;
  }
  Shape out;
  for (int64_t i = 0; i < shape.ndim(); ++i) {
    if (!reduced[static_cast<size_t>(i)]) {
      out.push_back(shape[i]);
    } else if (keepdim) {
      out.push_back(Dim(1));
    }
  }
  return out;
}

void ShapeBinding::Bind(const Shape& declared, const Shape& concrete, std::string_view what) {
  OF_CHECK(concrete.is_static()) << what << ": shape " << concrete << " is not concrete";
  OF_CHECK_EQ(declared.ndim(), concrete.ndim())
      << what << " was declared with shape " << declared << " but has shape " << concrete;
  std::unordered_map<int64_t, int64_t> sizes = symbol_sizes_;  // committed only if every dim agrees
  for (int64_t i = 0; i < declared.ndim(); ++i) {
    const Dim d = declared[i], c = concrete[i];
    if (d.is_known()) {
      OF_CHECK(d == c) << what << " was declared with shape " << declared << " but has shape " << concrete;
    } else if (d.is_symbol()) {
      auto [it, inserted] = sizes.emplace(d.raw(), c.value());
      OF_CHECK(inserted || it->second == c.value())
          << what << " has size " << c << " at dim " << i << " where symbol " << d << " is already "
          << it->second;
    }
  }
  symbol_sizes_ = std::move(sizes);
}

Dim ShapeBinding::Resolve(Dim d) const {
  if (!d.is_symbol()) return d;
  auto it = symbol_sizes_.find(d.raw());
  return it == symbol_sizes_.end() ? d : Dim(it->second);
}

Shape ShapeBinding::Resolve(const Shape& shape) const {
  Shape out = shape;
  for (int64_t i = 0; i < out.ndim(); ++i) out[i] = Resolve(out[i]);
  return out;
}

}  // namespace oneflow
