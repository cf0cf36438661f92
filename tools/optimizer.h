// defines: triax::make_optimizer
//
// The optimizer the `train:` section asks for, over the given parameters: AdamW (decoupled weight
// decay) or SGD with momentum (L2 weight decay), both LibTorch's.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "core/config.h"

namespace triax {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const TrainConfig& train, const std::vector<torch::Tensor>& parameters);

}  // namespace triax
