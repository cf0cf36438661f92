// defines: triax::TpDropout
//
// Dropout whose random streams are right under tensor parallelism (Megatron's RNG tracker):
//  - inside the tensor-parallel region (attention probabilities, which are split by head), each
//    tp rank holds different data, so it draws from its own stream: seed + kTpStreamOffset +
//    tp_rank;
//  - outside it (embeddings, residual branches), every tp rank holds the same activations and
//    must drop the same elements, so all draw from one shared stream: seed.
// With p = 0 or in eval mode dropout is the identity and draws nothing, so the model is
// deterministic.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

namespace triax {

class TpDropout {
 public:
  /// Megatron's offset between the shared and the per-tp-rank streams.
  static constexpr uint64_t kTpStreamOffset = 2718;

  TpDropout(uint64_t seed, int tp_rank);

  /// Dropout with the stream shared by all tp ranks.
  torch::Tensor shared(const torch::Tensor& x, double p, bool training);
  /// Dropout with this tp rank's own stream.
  torch::Tensor tp_local(const torch::Tensor& x, double p, bool training);

  /// Both streams' positions (a checkpoint saves them so a resumed run drops the same elements):
  /// {shared, tp_local}, as the generators' byte states.
  std::vector<torch::Tensor> state() const;
  void set_state(const std::vector<torch::Tensor>& state);

 private:
  static torch::Tensor apply(const torch::Tensor& x, double p, bool training, at::Generator& gen);
  at::Generator shared_;
  at::Generator tp_local_;
};

}  // namespace triax
