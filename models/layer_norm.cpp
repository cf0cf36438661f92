#include "models/layer_norm.h"

#include "core/bf16_matmul.h"

namespace triax {

LayerNormImpl::LayerNormImpl(int64_t features, double eps) : features_(features), eps_(eps) {
  weight = register_parameter("weight", torch::ones({features}));
  bias = register_parameter("bias", torch::zeros({features}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  // Only bf16 weights meeting an fp32 input are widened; anything else is layer_norm's to judge.
  const auto like_x = [&](const torch::Tensor& t) {
    const bool widen = t.scalar_type() == torch::kBFloat16 && x.scalar_type() == torch::kFloat;
    return widen ? convert_precision(t, torch::kFloat) : t;
  };
  return torch::layer_norm(x, {features_}, like_x(weight), like_x(bias), eps_);
}

}  // namespace triax
