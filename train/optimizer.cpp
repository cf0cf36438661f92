#include "train/optimizer.h"

#include "train/fused_adamw.h"

namespace triax {
namespace {

// Weight decay shrinks matrices (linear weights, embeddings) towards zero; on biases and
// LayerNorm gains/shifts (all 1-D) it only fights the model, as in GPT-2, Megatron and nanoGPT.
bool decays(const torch::Tensor& parameter) {
  return parameter.dim() >= 2;
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const TrainConfig& train, const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> decayed, not_decayed;
  for (const auto& p : parameters) (decays(p) ? decayed : not_decayed).push_back(p);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (train.optimizer == "adamw") {
    const auto options = [&](double decay) {
      return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(train.lr)
                                                              .betas({train.beta1, train.beta2})
                                                              .eps(train.eps)
                                                              .weight_decay(decay));
    };
    if (!decayed.empty()) groups.emplace_back(decayed, options(train.weight_decay));
    if (!not_decayed.empty()) groups.emplace_back(not_decayed, options(0.0));
    return std::make_unique<FusedAdamW>(groups, torch::optim::AdamWOptions(train.lr));
  }
  const auto options = [&](double decay) {
    return std::make_unique<torch::optim::SGDOptions>(
        torch::optim::SGDOptions(train.lr).momentum(train.momentum).weight_decay(decay));
  };
  if (!decayed.empty()) groups.emplace_back(decayed, options(train.weight_decay));
  if (!not_decayed.empty()) groups.emplace_back(not_decayed, options(0.0));
  return std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(train.lr));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace triax
