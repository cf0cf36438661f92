#include "train/optim/replicated_optimizer.h"

#include "checkpoint/state_name.h"
#include "core/error.h"
#include "core/torch_compat.h"
#include "parallel/dp/grad_norm.h"
#include "train/optim/fused_adamw.h"

namespace triax {
namespace {

// Weight decay shrinks matrices (linear weights, embeddings) towards zero; on biases and
// LayerNorm gains/shifts (all 1-D) it only fights the model, as in GPT-2, Megatron and nanoGPT.
bool decays(const torch::Tensor& parameter) {
  return parameter.dim() >= 2;
}

// How LibTorch's optimizers key their per-parameter state.
auto state_key(const torch::Tensor& p) {
  return optimizer_state_key(p);
}

std::string state_name(const std::string& param, const char* kind) {
  StateName key = StateName::parse(param);
  key.state = kind;
  return key.str();
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_torch_optimizer(
    const TrainConfig& train, const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> decayed, not_decayed;
  for (const auto& p : parameters) (decays(p) ? decayed : not_decayed).push_back(p);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (train.optimizer == OptimizerKind::kAdamW) {
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

ReplicatedOptimizer::ReplicatedOptimizer(const TrainConfig& train,
                                         std::vector<OptimizedParam> params,
                                         Communicator& model_parallel)
    : params_(std::move(params)), model_parallel_(model_parallel) {
  std::vector<torch::Tensor> tensors;
  for (const auto& p : params_) tensors.push_back(p.tensor);
  optimizer_ = make_torch_optimizer(train, tensors);
  adamw_ = dynamic_cast<torch::optim::AdamW*>(optimizer_.get()) != nullptr;
}

void ReplicatedOptimizer::set_learning_rate(double lr) {
  triax::set_learning_rate(*optimizer_, lr);
}

double ReplicatedOptimizer::step(double max_norm) {
  std::vector<torch::Tensor> all, counted;
  for (const auto& p : params_) {
    all.push_back(p.tensor.grad());
    if (p.counted) counted.push_back(p.tensor.grad());
  }
  double norm = 0;
  if (norm_source_) {
    norm = norm_source_();
    clip_to_norm(all, norm, max_norm);
  } else {
    norm = clip_grad_norm(all, counted, max_norm, model_parallel_);
  }
  optimizer_->step();
  return norm;
}

std::vector<NamedTensors> ReplicatedOptimizer::state_by_parameter() {
  std::vector<NamedTensors> out(params_.size());
  auto& state = optimizer_->state();
  for (size_t k = 0; k < params_.size(); ++k) {
    const auto it = state.find(state_key(params_[k].tensor));
    if (it == state.end()) continue;  // before the first step
    const std::string& name = params_[k].name;
    if (auto* adam = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
      out[k].emplace_back(state_name(name, "exp_avg"), adam->exp_avg());
      out[k].emplace_back(state_name(name, "exp_avg_sq"), adam->exp_avg_sq());
      out[k].emplace_back(state_name(name, "step"), torch::tensor({adam->step()}, torch::kLong));
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      out[k].emplace_back(state_name(name, "momentum"), sgd->momentum_buffer());
    }
  }
  return out;
}

void ReplicatedOptimizer::load_state(const std::map<std::string, torch::Tensor>& tensors) {
  const auto get = [&](const std::string& param, const char* kind) -> const torch::Tensor* {
    const auto it = tensors.find(state_name(param, kind));
    return it == tensors.end() ? nullptr : &it->second;
  };
  auto& state = optimizer_->state();
  for (const auto& p : params_) {
    // State of the other optimizer kind would be cast to the wrong type inside step().
    state.erase(state_key(p.tensor));
    if (const torch::Tensor* avg = get(p.name, "exp_avg")) {
      if (!adamw_)
        throw Error(str("checkpoint holds AdamW state for ", p.name,
                        "; this run's optimizer is not AdamW"));
      auto restored = std::make_unique<torch::optim::AdamWParamState>();
      // Copies on the parameter's device (a checkpoint is read to the host).
      restored->exp_avg(avg->to(p.tensor.device(), /*non_blocking=*/false, /*copy=*/true));
      const torch::Tensor* sq = get(p.name, "exp_avg_sq");
      const torch::Tensor* steps = get(p.name, "step");
      if (sq == nullptr || steps == nullptr)
        throw Error(str("checkpoint lacks AdamW state of ", p.name));
      restored->exp_avg_sq(sq->to(p.tensor.device(), false, true));
      restored->step(steps->item<int64_t>());
      state[state_key(p.tensor)] = std::move(restored);
    } else if (const torch::Tensor* momentum = get(p.name, "momentum")) {
      if (adamw_)
        throw Error(str("checkpoint holds SGD momentum for ", p.name, "; this run uses AdamW"));
      auto restored = std::make_unique<torch::optim::SGDParamState>();
      restored->momentum_buffer(momentum->to(p.tensor.device(), false, true));
      state[state_key(p.tensor)] = std::move(restored);
    }
  }
}

int64_t ReplicatedOptimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& [key, state] : optimizer_->state()) {
    if (auto* adam = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) {
      bytes += adam->exp_avg().nbytes() + adam->exp_avg_sq().nbytes();
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      bytes += sgd->momentum_buffer().nbytes();
    }
  }
  return bytes;
}

}  // namespace triax
