// defines: triax::MlpChunk, triax::mlp_spec, triax::kMlpInputs, triax::kMlpClasses
//
// The Fashion-MNIST MLP as a model spec (models/model_spec.h): one chunk (data parallelism only;
// check_mlp_layout refuses tensor and pipeline parallelism), samples are images [784] with a
// class label, the loss is the mean cross-entropy, and evaluation measures test accuracy.
#pragma once

#include "models/mlp.h"
#include "models/model_spec.h"

namespace triax {

constexpr int64_t kMlpInputs = 28 * 28;
constexpr int64_t kMlpClasses = 10;

class MlpChunk : public ModelChunk {
 public:
  explicit MlpChunk(MlpOptions options) : mlp_(std::move(options)) {}
  torch::nn::Module& module() override { return *mlp_; }
  torch::Tensor forward(const torch::Tensor& input, const Batch& micro) override;
  torch::Tensor loss(const torch::Tensor& output, const Batch& micro) override;
  /// The fraction of the micro-batch classified correctly.
  torch::Tensor metric(const torch::Tensor& output, const Batch& micro) override;

 private:
  Mlp mlp_;
};

const ModelSpec& mlp_spec();

}  // namespace triax
