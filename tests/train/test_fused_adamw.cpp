// FusedAdamW follows LibTorch's AdamW step for step (weights, both moments, step count), with and
// without weight decay, and falls back to LibTorch's step for tensors it does not fuse.
#include <catch2/catch.hpp>

#include "core/torch_compat.h"
#include "train/optim/fused_adamw.h"

using namespace triax;

namespace {

// Runs `steps` updates with fixed pseudo-random gradients on copies of `start`; returns the
// final parameters followed by each one's exp_avg and exp_avg_sq.
template <typename Optimizer>
std::vector<torch::Tensor> run(const std::vector<torch::Tensor>& start, int steps) {
  std::vector<torch::Tensor> params;
  for (const auto& t : start) params.push_back(t.clone().requires_grad_());
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{params[0]},
                      std::make_unique<torch::optim::AdamWOptions>(
                          torch::optim::AdamWOptions(3e-3).weight_decay(0.1)));
  groups.emplace_back(std::vector<torch::Tensor>(params.begin() + 1, params.end()),
                      std::make_unique<torch::optim::AdamWOptions>(
                          torch::optim::AdamWOptions(3e-3).weight_decay(0.0)));
  Optimizer optimizer(groups, torch::optim::AdamWOptions(3e-3));
  for (int s = 0; s < steps; ++s) {
    torch::manual_seed(100 + s);
    for (auto& p : params) p.mutable_grad() = torch::randn_like(p) * (s + 1);
    optimizer.step();
  }
  std::vector<torch::Tensor> out;
  for (auto& p : params) out.push_back(p.detach());
  for (auto& p : params) {
    auto& state =
        static_cast<torch::optim::AdamWParamState&>(*optimizer.state().at(optimizer_state_key(p)));
    CHECK(state.step() == steps);
    out.push_back(state.exp_avg());
    out.push_back(state.exp_avg_sq());
  }
  return out;
}

}  // namespace

TEST_CASE("FusedAdamW matches LibTorch's AdamW", "[optimizer]") {
  torch::manual_seed(1);
  const std::vector<torch::Tensor> start = {torch::randn({64, 33}), torch::randn({33}),
                                            torch::randn({70000})};  // > one parallel chunk
  const auto expected = run<torch::optim::AdamW>(start, 7);
  const auto got = run<FusedAdamW>(start, 7);
  REQUIRE(got.size() == expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("tensor " << k);
    // Decay (lr * wd = 3e-4 per step) or a moment's coefficient missing would be far outside.
    CHECK(got[k].allclose(expected[k], 1e-5, 1e-6));  // a multiply-add rounding apart
  }
}

TEST_CASE("FusedAdamW falls back to LibTorch's step for tensors it does not fuse", "[optimizer]") {
  const std::vector<torch::Tensor> start = {torch::randn({8, 4}, torch::kDouble),
                                            torch::randn({4}, torch::kDouble)};
  const auto expected = run<torch::optim::AdamW>(start, 3);
  const auto got = run<FusedAdamW>(start, 3);
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k].equal(expected[k]));
}
