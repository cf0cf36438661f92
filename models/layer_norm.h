// defines: triax::LayerNormImpl, triax::LayerNorm
//
// The GPT's LayerNorm (Ba et al. 2016): (x - mean) / sqrt(var + eps) * weight + bias over the last
// dimension, computed by LibTorch's layer_norm in x's dtype (the fp32 residual stream) — the same
// op and parameters ("weight", "bias") as torch::nn::LayerNorm. Bf16 working weights
// (train.param_dtype: bf16) are widened to x's dtype first, exactly, since layer_norm takes one
// dtype; their gradients come back rounded to bf16.
#pragma once

#include <torch/torch.h>

namespace triax {

class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t features, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;

 private:
  int64_t features_;
  double eps_;
};
TORCH_MODULE(LayerNorm);

}  // namespace triax
