#include "parallel/data_parallel.h"

namespace triax {

void broadcast_parameters(torch::nn::Module& module, Communicator& dp, int root) {
  torch::NoGradGuard no_grad;
  std::vector<WorkPtr> pending;
  for (auto& parameter : module.parameters())
    pending.push_back(dp.broadcast_async(parameter, root));
  for (auto& buffer : module.buffers()) pending.push_back(dp.broadcast_async(buffer, root));
  for (auto& work : pending) work->wait();
}

void average_gradients(const std::vector<torch::Tensor>& parameters, Communicator& dp) {
  if (dp.size() == 1) return;
  std::vector<WorkPtr> pending;
  pending.reserve(parameters.size());
  for (const auto& parameter : parameters) {
    torch::Tensor grad = parameter.mutable_grad();
    if (!grad.defined()) {
      parameter.mutable_grad() = torch::zeros_like(parameter);
      grad = parameter.mutable_grad();
    }
    pending.push_back(dp.all_reduce_async(grad, ReduceOp::kAvg));
  }
  for (auto& work : pending) work->wait();
}

}  // namespace triax
