#include "models/lm_head.h"

#include <limits>

#include "core/bf16_matmul.h"
#include "parallel/tp/sequence_parallel.h"
#include "parallel/tp/tp_mappings.h"
#include "parallel/tp/vocab_parallel_cross_entropy.h"

namespace triax {

torch::Tensor output_logits(const torch::Tensor& x, const torch::Tensor& tied_weight,
                            ColumnParallelLinear& head, bool sequence_parallel, Communicator& tp) {
  if (sequence_parallel) {  // gathers the sequence; its backward sums over tp (no f)
    return tied_weight.defined() ? gathered_linear(x, tied_weight, torch::Tensor(), tp)
                                 : head->forward_gathered(x);
  }
  if (tied_weight.defined()) return mixed_linear(copy_to_tp_region(x, tp), tied_weight);
  return head(x);
}

torch::Tensor mean_token_loss(const torch::Tensor& local_logits, const torch::Tensor& targets,
                              Communicator& tp, int64_t vocab, int64_t ignore_index) {
  // The loss in fp32 whatever the logits' dtype (bf16 under autocast).
  const torch::Tensor per_token = vocab_parallel_cross_entropy(
      convert_precision(local_logits, torch::kFloat).reshape({-1, local_logits.size(-1)}),
      targets.reshape({-1}), tp, vocab, ignore_index);
  const torch::Tensor count = targets.ne(ignore_index).sum().clamp_min(1);
  return per_token.sum() / count;
}

const torch::Tensor& CausalBias::of(int64_t s, const torch::Device& device) {
  if (!bias_.defined() || bias_.size(0) != s || bias_.device() != device) {
    bias_ = torch::zeros({s, s}, device)
                .masked_fill(
                    torch::ones({s, s}, torch::TensorOptions(torch::kBool).device(device)).triu(1),
                    -std::numeric_limits<float>::infinity());
  }
  return bias_;
}

}  // namespace triax
