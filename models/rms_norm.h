// defines: triax::RmsNormImpl, triax::RmsNorm
//
// RMSNorm (Zhang & Sennrich 2019; Llama): x / sqrt(mean(x^2) + eps) * weight, computed in fp32
// whatever x's dtype, rounded back to it before the weight (Hugging Face's LlamaRMSNorm).
#pragma once

#include <torch/torch.h>

namespace triax {

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t features, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

}  // namespace triax
