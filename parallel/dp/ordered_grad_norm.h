// defines: triax::OrderedGradNorm, triax::ordered_sum_of_squares
//
// The global gradient norm of layout-invariant numerics (docs/numerics.md): the same bits
// whatever the pipeline split and the thread count. clip_grad_norm (grad_norm.h) adds each
// rank's squares, then the ranks' sums: the association follows the layout. Here each parameter's
// sum of squares is computed alone (float64 squares of the fp32 gradient, eight fixed lanes then
// their tree: no dependence on threads or on what else this rank holds), gathered over the
// model-parallel group, and added in one order fixed by the parameters' keys (a hash of the name
// the caller gives, the same on every layout), one after the other in float64.
// Under tensor parallelism a sharded parameter's shard is a different tensor at every tp size, so
// the norm is layout-invariant over dp and pp (and schedules, recompute, ZeRO), not over tp.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

/// Sum of the squares of `t`'s elements (float32 or float64) in float64, in an association fixed
/// by its element count alone.
double ordered_sum_of_squares(const torch::Tensor& t);

class OrderedGradNorm {
 public:
  /// `counted`: this rank's parameters that count in the norm, each with a key unique over the
  /// model-parallel group and independent of the layout. Collective over `model_parallel`.
  OrderedGradNorm(std::vector<std::pair<std::string, torch::Tensor>> counted,
                  Communicator& model_parallel);
  /// The global norm of the parameters' current gradients (collective over the group).
  double norm();

 private:
  std::vector<torch::Tensor> params_;
  std::vector<int64_t> order_;  // positions in the gathered [ranks x width] squares, by key
  int64_t width_ = 0;           // the most parameters one rank counts
  Communicator& comm_;
};

}  // namespace triax
