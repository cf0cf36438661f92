#include "parallel/dp/grad_norm.h"

#include <cmath>

namespace triax {

double clip_grad_norm(const std::vector<torch::Tensor>& all,
                      const std::vector<torch::Tensor>& counted, double max_norm,
                      Communicator& model_parallel) {
  torch::Tensor squares = torch::zeros({1}, torch::kDouble);
  for (const auto& g : counted) {
    if (g.defined()) squares += g.to(torch::kDouble).pow(2).sum();
  }
  model_parallel.all_reduce(squares, ReduceOp::kSum);
  const double norm = std::sqrt(squares.item<double>());
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    torch::NoGradGuard no_grad;
    for (const auto& g : all) {
      if (g.defined()) g.mul_(scale);
    }
  }
  return norm;
}

}  // namespace triax
