#include "parallel/tp/vocab_parallel_cross_entropy.h"

#include <limits>

#include "core/error.h"

namespace triax {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& target, Communicator* tp, int64_t vocab_size,
                               int64_t ignore_index) {
    const int64_t columns = logits.size(1);
    const int64_t start = tp->rank() * columns;
    torch::Tensor z = logits.detach().clone();
    if (start + columns > vocab_size) {  // padding columns: exp(-inf) = 0
      z.narrow(1, std::max<int64_t>(0, vocab_size - start),
               start + columns - std::max(start, vocab_size))
          .fill_(-std::numeric_limits<float>::infinity());
    }
    torch::Tensor max = std::get<0>(z.max(1));
    tp->all_reduce(max, ReduceOp::kMax);
    z.sub_(max.unsqueeze(1));
    torch::Tensor exp = z.exp();
    torch::Tensor sum = exp.sum(1);
    tp->all_reduce(sum, ReduceOp::kSum);

    const torch::Tensor valid = target.ne(ignore_index);
    const torch::Tensor mine = (target >= start).logical_and(target < start + columns);
    const torch::Tensor local = (target - start).masked_fill(mine.logical_not(), 0);
    torch::Tensor target_logit =
        z.gather(1, local.unsqueeze(1)).squeeze(1).masked_fill(mine.logical_not(), 0.0);
    tp->all_reduce(target_logit, ReduceOp::kSum);

    const torch::Tensor loss = (sum.log() - target_logit).masked_fill(valid.logical_not(), 0.0);
    exp.div_(sum.unsqueeze(1));  // now the softmax, kept for backward
    ctx->save_for_backward({exp, local, mine.logical_and(valid), valid});
    return loss;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& softmax = saved[0];
    const torch::Tensor& local = saved[1];
    const torch::Tensor& mine = saved[2];
    const torch::Tensor& valid = saved[3];
    torch::Tensor grad = softmax.clone();
    grad.scatter_add_(1, local.unsqueeze(1), -mine.to(grad.dtype()).unsqueeze(1));
    grad.mul_((grads[0] * valid.to(grad.dtype())).unsqueeze(1));
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& local_logits,
                                           const torch::Tensor& target, Communicator& tp,
                                           int64_t vocab_size, int64_t ignore_index) {
  TRIAX_CHECK(
      local_logits.dim() == 2 && target.dim() == 1 && target.size(0) == local_logits.size(0),
      "expected logits [N, V/tp] and targets [N], got ", local_logits.sizes(), " and ",
      target.sizes());
  TRIAX_CHECK(local_logits.size(1) * tp.size() >= vocab_size, "logits cover ",
              local_logits.size(1) * tp.size(), " ids, fewer than the vocabulary ", vocab_size);
  if (tp.size() == 1 && local_logits.size(1) == vocab_size) {
    // Nothing to combine across ranks: LibTorch's fused log-softmax + NLL (two kernels each
    // way) instead of the dozen ops the sharded form needs.
    return torch::nll_loss(torch::log_softmax(local_logits, 1), target, {}, at::Reduction::None,
                           ignore_index);
  }
  return VocabParallelCrossEntropy::apply(local_logits, target, &tp, vocab_size, ignore_index);
}

}  // namespace triax
