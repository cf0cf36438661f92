// AdamW decays matrices, not biases or norms; the schedule's rate reaches every group.
#include <catch2/catch.hpp>

#include "train/optim/replicated_optimizer.h"

using namespace triax;

TEST_CASE("weight decay applies to matrices only", "[optimizer]") {
  TrainConfig train;
  train.optimizer = OptimizerKind::kAdamW;
  train.lr = 0.1;
  train.weight_decay = 0.5;
  torch::Tensor matrix = torch::ones({2, 2}, torch::requires_grad());
  torch::Tensor bias = torch::ones({2}, torch::requires_grad());
  auto optimizer = make_torch_optimizer(train, {matrix, bias});
  REQUIRE(optimizer->param_groups().size() == 2);
  // Zero gradients: only decoupled decay can move a parameter (by lr * weight_decay).
  matrix.mutable_grad() = torch::zeros_like(matrix);
  bias.mutable_grad() = torch::zeros_like(bias);
  optimizer->step();
  CHECK(matrix.detach().allclose(torch::full({2, 2}, 1.0 - 0.1 * 0.5)));
  CHECK(bias.detach().equal(torch::ones({2})));

  set_learning_rate(*optimizer, 0.01);
  for (auto& group : optimizer->param_groups()) CHECK(group.options().get_lr() == 0.01);
}
