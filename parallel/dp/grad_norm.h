// defines: triax::clip_grad_norm, triax::clip_to_norm, triax::sum_of_squares
//
// Global gradient-norm clipping when the model is spread over tensor and pipeline ranks. The norm
// must be that of the whole model's gradient, each parameter counted exactly once:
//  - a tp-sharded parameter contributes its shard on every tp rank (shards are disjoint);
//  - a parameter replicated across tp (LayerNorm weights, row-parallel biases, position
//    embeddings) contributes on tp rank 0 only;
//  - a tied embedding held by the first and the last pipeline stage contributes on one of them;
//  - nothing is summed over dp: after averaging, gradients are equal on every dp rank.
// The caller says which gradients count (`counted`); the sum of squares is all-reduced over the
// model-parallel group (tp x pp), and every gradient (`all`) is scaled by
// max_norm / (norm + 1e-6) when the norm exceeds max_norm (torch.nn.utils.clip_grad_norm_).
// (torchtitan#596 summed replicated parameters once per tp rank.)
#pragma once

#include <torch/torch.h>

#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

/// Sum of the squares of every element of `tensors` (undefined ones skipped), in double: one fp32
/// norm per tensor, squared and summed in double. A [1] kDouble tensor, ready to all-reduce.
torch::Tensor sum_of_squares(const std::vector<torch::Tensor>& tensors);

/// Scales every gradient of `all` by max_norm / (norm + 1e-6) when `norm` exceeds max_norm > 0.
void clip_to_norm(const std::vector<torch::Tensor>& all, double norm, double max_norm);

/// Returns the global norm before clipping; max_norm <= 0 only measures.
double clip_grad_norm(const std::vector<torch::Tensor>& all,
                      const std::vector<torch::Tensor>& counted, double max_norm,
                      Communicator& model_parallel);

}  // namespace triax
