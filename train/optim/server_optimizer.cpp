#include "train/optim/server_optimizer.h"

#include "checkpoint/state_name.h"
#include "core/error.h"

namespace triax {

ServerOptimizer::ServerOptimizer(std::vector<OptimizedParam> params, ServerClient& client)
    : params_(std::move(params)), client_(client) {}

double ServerOptimizer::step(double /*max_norm*/) {
  // The servers clip with the max_norm the client gave them at start (train.clip_grad).
  return client_.pull();
}

std::vector<NamedTensors> ServerOptimizer::state_by_parameter() {
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < params_.size(); ++k) index[params_[k].name] = k;
  std::vector<NamedTensors> out(params_.size());
  for (auto& [name, tensor] : client_.fetch_state()) {
    StateName key = StateName::parse(name);
    key.state.clear();
    const auto it = index.find(key.str());
    TRIAX_CHECK(it != index.end(), "parameter servers sent state ", name,
                " of a parameter this worker does not hold");
    out[it->second].emplace_back(name, tensor);
  }
  return out;
}

void ServerOptimizer::load_state(const std::map<std::string, torch::Tensor>& tensors) {
  client_.load(tensors);
}

}  // namespace triax
