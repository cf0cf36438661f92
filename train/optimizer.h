// defines: triax::make_optimizer, triax::set_learning_rate
//
// The optimizer the `train:` section asks for, over the given parameters: AdamW (betas, eps,
// decoupled weight decay; LibTorch's, updated in one pass per parameter: train/fused_adamw.h) or
// SGD with momentum (L2 weight decay, LibTorch's). Weight decay
// applies to matrices only (dim >= 2); biases and LayerNorm parameters are in a group without it.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "core/config.h"

namespace triax {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const TrainConfig& train, const std::vector<torch::Tensor>& parameters);

/// Sets every parameter group's learning rate (the schedule's value for this step).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace triax
