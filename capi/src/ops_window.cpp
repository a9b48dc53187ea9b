// The C ABI of the window family (core/ops/window.h): max pooling with its indices and max unpooling.
// Asymmetric padding of of_conv2d and the poolings is read with them in capi/src/ops.cpp.
#include "capi/src/window_options.h"
#include "core/ops/window.h"

using namespace oneflow;
using capi::Borrow;
using capi::Ints;
using capi::PaddingEnd;
using capi::PoolOptions;
using capi::ReadPoolOptions;
using capi::Run;
using capi::RunMulti;

of_status_t* of_max_pool2d_with_indices(of_session_t* session, const of_tensor_t* x, const of_pool2d_options_t* options,
                                        of_tensor_t** out_values, of_tensor_t** out_indices) {
  return RunMulti<2>(__func__, session, {out_values, out_indices}, {"out_values", "out_indices"}, [&] {
    const of_pool2d_options_t o = ReadPoolOptions(options);
    auto [values, indices] =
        ops::MaxPool2dWithIndices(Borrow(x, "x"), PoolOptions(o), PaddingEnd(o.padding, o.padding_end));
    return std::array<TensorPtr, 2>{std::move(values), std::move(indices)};
  });
}

of_status_t* of_max_unpool2d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* indices,
                             const of_pool2d_options_t* options, const int64_t* output_size, size_t n,
                             of_tensor_t** out_tensor) {
  return Run(__func__, session, out_tensor, [&] {
    const of_pool2d_options_t o = ReadPoolOptions(options);
    std::vector<int64_t> size = Ints(output_size, n, "output_size");
    // As PyTorch: (H, W), or (N, C, H, W) of which the last two count.
    OF_CHECK(n == 0 || n == 2 || n == 4)
        << "output_size must have 0 (the default), 2 (H, W) or 4 (N, C, H, W) values, got " << n;
    if (n == 4) size.erase(size.begin(), size.begin() + 2);
    return ops::MaxUnpool2d(Borrow(x, "x"), Borrow(indices, "indices"), PoolOptions(o), size,
                            PaddingEnd(o.padding, o.padding_end));
  });
}
