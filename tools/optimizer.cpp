#include "tools/optimizer.h"

namespace triax {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const TrainConfig& train, const std::vector<torch::Tensor>& parameters) {
  if (train.optimizer == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        parameters, torch::optim::AdamWOptions(train.lr).weight_decay(train.weight_decay));
  }
  return std::make_unique<torch::optim::SGD>(
      parameters,
      torch::optim::SGDOptions(train.lr).momentum(train.momentum).weight_decay(train.weight_decay));
}

}  // namespace triax
