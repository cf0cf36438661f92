#include "models/layer_norm.h"

#include "core/bf16_matmul.h"

namespace triax {

LayerNormImpl::LayerNormImpl(int64_t features, double eps) : features_(features), eps_(eps) {
  weight = register_parameter("weight", torch::ones({features}));
  bias = register_parameter("bias", torch::zeros({features}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  return torch::layer_norm(x, {features_}, convert_precision(weight, x.scalar_type()),
                           convert_precision(bias, x.scalar_type()), eps_);
}

}  // namespace triax
