// defines: triax::RowParallelLinearOptions, RowParallelLinearImpl, RowParallelLinear
//
// Y = X A + b with A split by rows over tp ranks and X by columns:
//   A = [A_1; ...; A_p], X = [X_1 ... X_p], Y = sum_i X_i A_i + b.
// Each rank computes X_i A_i; g (reduce_from_tp_region) sums them; the bias, replicated on every
// tp rank, is added once, after the reduction. With input_is_parallel the input is already X_i
// (the output of a ColumnParallelLinear); otherwise it is split here.
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"
#include "parallel/tp/shard_spec.h"

namespace triax {

struct RowParallelLinearOptions {
  RowParallelLinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);             ///< input features (full)
  TORCH_ARG(int64_t, out_features);            ///< output features
  TORCH_ARG(bool, bias) = true;                ///< add a replicated bias after the reduction
  TORCH_ARG(bool, input_is_parallel) = false;  ///< the input is already split by columns
  TORCH_ARG(double, init_std) = 0.02;          ///< weights ~ N(0, init_std^2); bias 0
};

class RowParallelLinearImpl : public torch::nn::Module, public ShardedModule {
 public:
  RowParallelLinearImpl(const RowParallelLinearOptions& options, Communicator& tp);
  /// [..., in / tp] (input_is_parallel) or [..., in] -> [..., out].
  torch::Tensor forward(const torch::Tensor& x);
  /// Sequence parallelism: the partial sums are reduce-scattered along the sequence (dim 1)
  /// instead of all-reduced; the bias is added to this rank's rows. Input split by columns.
  torch::Tensor forward_scattered(const torch::Tensor& x);
  std::map<std::string, ShardSpec> shard_specs() const override;

  torch::Tensor weight;  ///< [out, in / tp]
  torch::Tensor bias;    ///< [out], replicated, or undefined

 private:
  RowParallelLinearOptions options_;
  Communicator* tp_;
};
TORCH_MODULE(RowParallelLinear);

}  // namespace triax
