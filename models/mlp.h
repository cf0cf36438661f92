// defines: triax::MlpOptions, triax::MlpImpl, triax::Mlp, triax::check_mlp_layout
//
// A multi-layer perceptron: Linear -> ReLU -> ... -> Linear (logits), for Fashion-MNIST
// (784 -> hidden... -> 10). Weights follow LibTorch's default Linear initialisation from the
// global generator, so seeding it before construction fixes the initial weights.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/config.h"

namespace triax {

/// Throws ConfigError if `config` asks for something the MLP cannot do (tensor or pipeline
/// parallelism); pure, so it runs before any communication.
void check_mlp_layout(const Config& config);

struct MlpOptions {
  MlpOptions(int64_t in_features, std::vector<int64_t> hidden, int64_t out_features)
      : in_features_(in_features), hidden_(std::move(hidden)), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);          ///< input features (784 for 28x28 images)
  TORCH_ARG(std::vector<int64_t>, hidden);  ///< hidden widths, in order
  TORCH_ARG(int64_t, out_features);         ///< classes
};

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(MlpOptions options);
  /// [batch, in_features] -> logits [batch, out_features].
  torch::Tensor forward(torch::Tensor x);
  const MlpOptions& options() const { return options_; }

 private:
  MlpOptions options_;
  std::vector<torch::nn::Linear> layers_;
};
TORCH_MODULE(Mlp);

}  // namespace triax
