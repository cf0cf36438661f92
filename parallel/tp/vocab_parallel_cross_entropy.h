// defines: triax::vocab_parallel_cross_entropy
//
// Cross-entropy over logits split by vocabulary across tp ranks, without any rank holding the
// full logits. For each token, with z its logits over the whole vocabulary:
//   loss = log(sum_j exp(z_j - m)) - (z_target - m),   m = max_j z_j
// computed from three reductions over tp: the max (MAX), the sum of exponentials (SUM) and the
// target's logit, which only its owning rank contributes (SUM). The backward is local:
//   dloss/dz_j = softmax_j - [j == target].
// Padding columns (ids >= vocab_size) are excluded; tokens equal to ignore_index give loss 0 and
// no gradient.
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"

namespace triax {

/// Per-token losses [N] from this rank's logits [N, V_padded / tp] (columns
/// [rank * V_padded / tp, ...)) and targets [N] (int64).
torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& local_logits,
                                           const torch::Tensor& target, Communicator& tp,
                                           int64_t vocab_size, int64_t ignore_index = -100);

}  // namespace triax
