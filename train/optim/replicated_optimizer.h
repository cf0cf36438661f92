// defines: triax::ReplicatedOptimizer, triax::make_torch_optimizer, triax::set_learning_rate
//
// The optimizer of every dp rank holding the whole state: AdamW (betas, eps, decoupled weight
// decay; LibTorch's, updated in one pass per parameter: fused_adamw.h) or SGD with momentum (L2
// weight decay, LibTorch's). Weight decay applies to matrices only (dim >= 2); biases and
// LayerNorm parameters are in a group without it. step() clips with clip_grad_norm
// (parallel/dp/grad_norm.h) over the counted gradients, then updates. This is the one file that
// knows LibTorch's optimizer state types (AdamWParamState, SGDParamState) and how LibTorch keys
// them.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "train/optim/optimizer.h"

namespace triax {

/// LibTorch's optimizer the `train:` section asks for, over `parameters` (two groups: decayed
/// matrices, the rest undecayed).
std::unique_ptr<torch::optim::Optimizer> make_torch_optimizer(
    const TrainConfig& train, const std::vector<torch::Tensor>& parameters);

/// Sets every parameter group's learning rate.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

class ReplicatedOptimizer : public Optimizer {
 public:
  ReplicatedOptimizer(const TrainConfig& train, std::vector<OptimizedParam> params,
                      Communicator& model_parallel);
  void set_learning_rate(double lr) override;
  double step(double max_norm) override;
  std::vector<NamedTensors> state_by_parameter() override;
  void load_state(const std::map<std::string, torch::Tensor>& tensors) override;
  int64_t state_bytes() const override;

 private:
  std::vector<OptimizedParam> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  bool adamw_;
  Communicator& model_parallel_;
};

}  // namespace triax
