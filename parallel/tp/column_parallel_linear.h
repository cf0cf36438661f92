// defines: triax::ColumnParallelLinearOptions, ColumnParallelLinearImpl, ColumnParallelLinear
//
// Y = X A + b with A split by columns over tp ranks: A = [A_1 ... A_p], rank i computes
// Y_i = X A_i + b_i. The input enters through f (copy_to_tp_region: its gradient is summed over
// tp in backward); the output stays split (Y_i) unless gather_output.
// The full weight is drawn from the global generator (same state on every tp rank) and sliced,
// so tp = 1 and tp = k start from identical numbers.
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"
#include "parallel/tp/shard_spec.h"

namespace triax {

struct ColumnParallelLinearOptions {
  ColumnParallelLinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);         ///< input features (full)
  TORCH_ARG(int64_t, out_features);        ///< output features (full, before any padding)
  TORCH_ARG(bool, bias) = true;            ///< add a (split) bias
  TORCH_ARG(bool, gather_output) = false;  ///< all-gather Y so every rank has all columns
  /// Fused outputs: the columns are `stride` blocks (Q, K, V: 3), each split across tp.
  TORCH_ARG(int64_t, stride) = 1;
  /// Pad out_features with zero columns to a multiple of tp * stride (vocabulary heads).
  TORCH_ARG(bool, pad_to_tp) = false;
  TORCH_ARG(double, init_std) = 0.02;  ///< weights ~ N(0, init_std^2); bias 0
};

class ColumnParallelLinearImpl : public torch::nn::Module, public ShardedModule {
 public:
  ColumnParallelLinearImpl(const ColumnParallelLinearOptions& options, Communicator& tp);
  /// [..., in] -> [..., out / tp] (or [..., out] with gather_output).
  torch::Tensor forward(const torch::Tensor& x);
  /// Sequence parallelism: `x` is this rank's part of the sequence [b, s/tp, in]; it is
  /// all-gathered along the sequence inside the layer (gathered_linear, whose backward sums the
  /// input gradients over tp, so f is left out). Not for gather_output layers.
  torch::Tensor forward_gathered(const torch::Tensor& x);
  std::map<std::string, ShardSpec> shard_specs() const override;
  const ColumnParallelLinearOptions& options() const { return options_; }

  torch::Tensor weight;  ///< [out_padded / tp, in]
  torch::Tensor bias;    ///< [out_padded / tp] or undefined

 private:
  ColumnParallelLinearOptions options_;
  Communicator* tp_;
  ShardSpec spec_;
};
TORCH_MODULE(ColumnParallelLinear);

}  // namespace triax
