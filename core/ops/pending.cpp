// TEMPORARY (development only): weak placeholders so the library links while op families are written.
#include "core/ops/ops.h"
namespace oneflow::ops {
__attribute__((weak)) TensorPtr ScalarLike(const TensorPtr& like, double value) { OF_THROW(Unimplemented) << "ScalarLike is not written yet"; }
__attribute__((weak)) TensorPtr ZerosLike(const TensorPtr& x) { OF_THROW(Unimplemented) << "ZerosLike is not written yet"; }
__attribute__((weak)) TensorPtr OnesLike(const TensorPtr& x) { OF_THROW(Unimplemented) << "OnesLike is not written yet"; }
__attribute__((weak)) TensorPtr FullLike(const TensorPtr& x, double value) { OF_THROW(Unimplemented) << "FullLike is not written yet"; }
__attribute__((weak)) TensorPtr Add(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Add is not written yet"; }
__attribute__((weak)) TensorPtr Sub(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Sub is not written yet"; }
__attribute__((weak)) TensorPtr Mul(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Mul is not written yet"; }
__attribute__((weak)) TensorPtr Div(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Div is not written yet"; }
__attribute__((weak)) TensorPtr Pow(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Pow is not written yet"; }
__attribute__((weak)) TensorPtr Maximum(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Maximum is not written yet"; }
__attribute__((weak)) TensorPtr Minimum(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Minimum is not written yet"; }
__attribute__((weak)) TensorPtr AddScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "AddScalar is not written yet"; }
__attribute__((weak)) TensorPtr SubScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "SubScalar is not written yet"; }
__attribute__((weak)) TensorPtr MulScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "MulScalar is not written yet"; }
__attribute__((weak)) TensorPtr DivScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "DivScalar is not written yet"; }
__attribute__((weak)) TensorPtr PowScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "PowScalar is not written yet"; }
__attribute__((weak)) TensorPtr MaximumScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "MaximumScalar is not written yet"; }
__attribute__((weak)) TensorPtr MinimumScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "MinimumScalar is not written yet"; }
__attribute__((weak)) TensorPtr Gt(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Gt is not written yet"; }
__attribute__((weak)) TensorPtr Ge(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Ge is not written yet"; }
__attribute__((weak)) TensorPtr Lt(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Lt is not written yet"; }
__attribute__((weak)) TensorPtr Le(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Le is not written yet"; }
__attribute__((weak)) TensorPtr Eq(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Eq is not written yet"; }
__attribute__((weak)) TensorPtr Ne(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Ne is not written yet"; }
__attribute__((weak)) TensorPtr GtScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "GtScalar is not written yet"; }
__attribute__((weak)) TensorPtr GeScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "GeScalar is not written yet"; }
__attribute__((weak)) TensorPtr LtScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "LtScalar is not written yet"; }
__attribute__((weak)) TensorPtr LeScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "LeScalar is not written yet"; }
__attribute__((weak)) TensorPtr EqScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "EqScalar is not written yet"; }
__attribute__((weak)) TensorPtr NeScalar(const TensorPtr& a, double b) { OF_THROW(Unimplemented) << "NeScalar is not written yet"; }
__attribute__((weak)) TensorPtr Where(const TensorPtr& cond, const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Where is not written yet"; }
__attribute__((weak)) TensorPtr LogicalAnd(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "LogicalAnd is not written yet"; }
__attribute__((weak)) TensorPtr LogicalOr(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "LogicalOr is not written yet"; }
__attribute__((weak)) TensorPtr LogicalNot(const TensorPtr& a) { OF_THROW(Unimplemented) << "LogicalNot is not written yet"; }
__attribute__((weak)) TensorPtr Neg(const TensorPtr& x) { OF_THROW(Unimplemented) << "Neg is not written yet"; }
__attribute__((weak)) TensorPtr Abs(const TensorPtr& x) { OF_THROW(Unimplemented) << "Abs is not written yet"; }
__attribute__((weak)) TensorPtr Exp(const TensorPtr& x) { OF_THROW(Unimplemented) << "Exp is not written yet"; }
__attribute__((weak)) TensorPtr Log(const TensorPtr& x) { OF_THROW(Unimplemented) << "Log is not written yet"; }
__attribute__((weak)) TensorPtr Sqrt(const TensorPtr& x) { OF_THROW(Unimplemented) << "Sqrt is not written yet"; }
__attribute__((weak)) TensorPtr Rsqrt(const TensorPtr& x) { OF_THROW(Unimplemented) << "Rsqrt is not written yet"; }
__attribute__((weak)) TensorPtr Relu(const TensorPtr& x) { OF_THROW(Unimplemented) << "Relu is not written yet"; }
__attribute__((weak)) TensorPtr Sigmoid(const TensorPtr& x) { OF_THROW(Unimplemented) << "Sigmoid is not written yet"; }
__attribute__((weak)) TensorPtr Tanh(const TensorPtr& x) { OF_THROW(Unimplemented) << "Tanh is not written yet"; }
__attribute__((weak)) TensorPtr Gelu(const TensorPtr& x, bool tanh_approximation) { OF_THROW(Unimplemented) << "Gelu is not written yet"; }
__attribute__((weak)) TensorPtr Cast(const TensorPtr& x, Symbol<DType> dtype) { OF_THROW(Unimplemented) << "Cast is not written yet"; }
__attribute__((weak)) TensorPtr Sum(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) { OF_THROW(Unimplemented) << "Sum is not written yet"; }
__attribute__((weak)) TensorPtr Mean(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) { OF_THROW(Unimplemented) << "Mean is not written yet"; }
__attribute__((weak)) TensorPtr Max(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) { OF_THROW(Unimplemented) << "Max is not written yet"; }
__attribute__((weak)) TensorPtr Min(const TensorPtr& x, const std::vector<int64_t>& dims, bool keepdim) { OF_THROW(Unimplemented) << "Min is not written yet"; }
__attribute__((weak)) TensorPtr Argmax(const TensorPtr& x, int64_t dim, bool keepdim) { OF_THROW(Unimplemented) << "Argmax is not written yet"; }
__attribute__((weak)) TensorPtr Var(const TensorPtr& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) { OF_THROW(Unimplemented) << "Var is not written yet"; }
__attribute__((weak)) TensorPtr Std(const TensorPtr& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) { OF_THROW(Unimplemented) << "Std is not written yet"; }
__attribute__((weak)) TensorPtr SumToShape(const TensorPtr& x, const Shape& shape) { OF_THROW(Unimplemented) << "SumToShape is not written yet"; }
__attribute__((weak)) TensorPtr Matmul(const TensorPtr& a, const TensorPtr& b) { OF_THROW(Unimplemented) << "Matmul is not written yet"; }
__attribute__((weak)) TensorPtr Linear(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias) { OF_THROW(Unimplemented) << "Linear is not written yet"; }
__attribute__((weak)) TensorPtr Conv2d(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias, const Conv2dOptions& options) { OF_THROW(Unimplemented) << "Conv2d is not written yet"; }
__attribute__((weak)) TensorPtr BatchNorm(const TensorPtr& x, const TensorPtr& weight, const TensorPtr& bias,
                    const TensorPtr& running_mean, const TensorPtr& running_var, const BatchNormOptions& options) { OF_THROW(Unimplemented) << "BatchNorm is not written yet"; }
__attribute__((weak)) TensorPtr MaxPool2d(const TensorPtr& x, const Pool2dOptions& options) { OF_THROW(Unimplemented) << "MaxPool2d is not written yet"; }
__attribute__((weak)) TensorPtr AvgPool2d(const TensorPtr& x, const Pool2dOptions& options) { OF_THROW(Unimplemented) << "AvgPool2d is not written yet"; }
__attribute__((weak)) TensorPtr AdaptiveAvgPool2d(const TensorPtr& x, const std::vector<int64_t>& output_size) { OF_THROW(Unimplemented) << "AdaptiveAvgPool2d is not written yet"; }
__attribute__((weak)) TensorPtr Reshape(const TensorPtr& x, const std::vector<int64_t>& shape) { OF_THROW(Unimplemented) << "Reshape is not written yet"; }
__attribute__((weak)) TensorPtr View(const TensorPtr& x, const std::vector<int64_t>& shape) { OF_THROW(Unimplemented) << "View is not written yet"; }
__attribute__((weak)) TensorPtr Flatten(const TensorPtr& x, int64_t start_dim, int64_t end_dim) { OF_THROW(Unimplemented) << "Flatten is not written yet"; }
__attribute__((weak)) TensorPtr Squeeze(const TensorPtr& x, const std::vector<int64_t>& dims) { OF_THROW(Unimplemented) << "Squeeze is not written yet"; }
__attribute__((weak)) TensorPtr Unsqueeze(const TensorPtr& x, int64_t dim) { OF_THROW(Unimplemented) << "Unsqueeze is not written yet"; }
__attribute__((weak)) TensorPtr Transpose(const TensorPtr& x, int64_t dim0, int64_t dim1) { OF_THROW(Unimplemented) << "Transpose is not written yet"; }
__attribute__((weak)) TensorPtr Permute(const TensorPtr& x, const std::vector<int64_t>& dims) { OF_THROW(Unimplemented) << "Permute is not written yet"; }
__attribute__((weak)) TensorPtr Contiguous(const TensorPtr& x) { OF_THROW(Unimplemented) << "Contiguous is not written yet"; }
__attribute__((weak)) TensorPtr Narrow(const TensorPtr& x, int64_t dim, int64_t start, int64_t length) { OF_THROW(Unimplemented) << "Narrow is not written yet"; }
__attribute__((weak)) TensorPtr Cat(const std::vector<TensorPtr>& tensors, int64_t dim) { OF_THROW(Unimplemented) << "Cat is not written yet"; }
__attribute__((weak)) TensorPtr Stack(const std::vector<TensorPtr>& tensors, int64_t dim) { OF_THROW(Unimplemented) << "Stack is not written yet"; }
__attribute__((weak)) TensorPtr Expand(const TensorPtr& x, const std::vector<int64_t>& shape) { OF_THROW(Unimplemented) << "Expand is not written yet"; }
__attribute__((weak)) TensorPtr Softmax(const TensorPtr& x, int64_t dim) { OF_THROW(Unimplemented) << "Softmax is not written yet"; }
__attribute__((weak)) TensorPtr LogSoftmax(const TensorPtr& x, int64_t dim) { OF_THROW(Unimplemented) << "LogSoftmax is not written yet"; }
__attribute__((weak)) Reduction ReductionFromName(std::string_view name) { OF_THROW(Unimplemented) << "ReductionFromName is not written yet"; }
__attribute__((weak)) std::string_view ReductionName(Reduction reduction) { OF_THROW(Unimplemented) << "ReductionName is not written yet"; }
__attribute__((weak)) TensorPtr CrossEntropy(const TensorPtr& logits, const TensorPtr& target, Reduction reduction,
                       int64_t ignore_index, double label_smoothing) { OF_THROW(Unimplemented) << "CrossEntropy is not written yet"; }
__attribute__((weak)) TensorPtr NllLoss(const TensorPtr& log_probs, const TensorPtr& target, Reduction reduction,
                  int64_t ignore_index) { OF_THROW(Unimplemented) << "NllLoss is not written yet"; }
__attribute__((weak)) TensorPtr Dropout(const TensorPtr& x, double p, bool training) { OF_THROW(Unimplemented) << "Dropout is not written yet"; }
}
