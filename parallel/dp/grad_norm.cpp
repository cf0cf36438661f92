#include "parallel/dp/grad_norm.h"

#include <cmath>

namespace triax {

torch::Tensor sum_of_squares(const std::vector<torch::Tensor>& tensors) {
  // One norm per tensor in its own dtype (a single vectorised pass; fp32 accumulation is good to
  // ~1e-7 relative), squared and summed in double: one op per tensor where a double copy of each
  // took four (0.75 -> 0.53 ms of a 45 ms step on the comparison GPT).
  std::vector<torch::Tensor> present;
  for (const auto& t : tensors) {
    if (t.defined()) present.push_back(t);
  }
  torch::Tensor squares = torch::zeros({1}, torch::kDouble);
  if (!present.empty()) {
    // On the host whatever the gradients' device: the sum then crosses the model-parallel group
    // (a host communicator) and is read as a number.
    squares += torch::stack(at::_foreach_norm(present)).to(torch::kDouble).square().sum().cpu();
  }
  return squares;
}

double clip_grad_norm(const std::vector<torch::Tensor>& all,
                      const std::vector<torch::Tensor>& counted, double max_norm,
                      Communicator& model_parallel) {
  torch::Tensor squares = sum_of_squares(counted);
  model_parallel.all_reduce(squares, ReduceOp::kSum);
  const double norm = std::sqrt(squares.item<double>());
  clip_to_norm(all, norm, max_norm);
  return norm;
}

void clip_to_norm(const std::vector<torch::Tensor>& all, double norm, double max_norm) {
  if (max_norm <= 0 || norm <= max_norm) return;
  const double scale = max_norm / (norm + 1e-6);
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& g : all) {
    if (g.defined()) grads.push_back(g);
  }
  at::_foreach_mul_(grads, scale);
}

}  // namespace triax
