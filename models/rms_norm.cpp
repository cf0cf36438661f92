#include "models/rms_norm.h"

#include "core/bf16_matmul.h"

namespace triax {

RmsNormImpl::RmsNormImpl(int64_t features, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({features}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const torch::Tensor x32 = convert_precision(x, torch::kFloat);
  const torch::Tensor normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps_);
  return weight * convert_precision(normed, x.scalar_type());
}

}  // namespace triax
