// defines: triax::output_logits, triax::mean_token_loss, triax::CausalBias
//
// What every decoder-only language model here (GPT, Llama) does the same way at its ends,
// written once:
//   output_logits    this rank's vocabulary columns of the logits from the final norm's output:
//                    the tied embedding or the column-parallel head, behind f (or, with sequence
//                    parallelism, gathering the sequence inside the layer: no f)
//   mean_token_loss  vocabulary-parallel cross-entropy (no rank holds the full logits), mean
//                    over the tokens that are not ignore_index
//   CausalBias       [s, s]: 0 on and below the diagonal, -inf above, built once per length and
//                    added to the attention scores inside their matmul
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"
#include "parallel/tp/column_parallel_linear.h"

namespace triax {

/// `x` [b, s, h] (this rank's [b, s/tp, h] with `sequence_parallel`) -> [b, s, padded_vocab/tp].
/// `tied_weight`: the embedding table when the head is tied, else undefined and `head` is used.
torch::Tensor output_logits(const torch::Tensor& x, const torch::Tensor& tied_weight,
                            ColumnParallelLinear& head, bool sequence_parallel, Communicator& tp);

/// Mean cross-entropy of `local_logits` [..., padded_vocab/tp] against `targets` [...].
torch::Tensor mean_token_loss(const torch::Tensor& local_logits, const torch::Tensor& targets,
                              Communicator& tp, int64_t vocab, int64_t ignore_index);

class CausalBias {
 public:
  /// On `device` (the scores'): built again when the length or the device changes.
  const torch::Tensor& of(int64_t s, const torch::Device& device);

 private:
  torch::Tensor bias_;
};

}  // namespace triax
