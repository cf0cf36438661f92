#include "parallel/grad_sums.h"

namespace triax {

void sum_sequence_partial_grads(const std::vector<torch::Tensor>& params, Communicator& tp) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  // One all-reduce for all of them (they are small: norms and biases).
  std::vector<torch::Tensor> flat;
  for (auto& g : grads) flat.push_back(g.reshape({-1}));
  torch::Tensor sum = torch::cat(flat);
  tp.all_reduce(sum, ReduceOp::kSum);
  int64_t offset = 0;
  for (auto& g : grads) {
    g.copy_(sum.narrow(0, offset, g.numel()).view(g.sizes()));
    offset += g.numel();
  }
}

void sum_tied_grads(const std::vector<torch::Tensor>& copies, Communicator* embedding_group) {
  if (copies.empty()) return;
  const bool across_ranks = embedding_group != nullptr && embedding_group->size() > 1;
  if (copies.size() == 1 && !across_ranks) return;  // one copy: its gradient is already whole
  torch::Tensor sum = torch::zeros_like(copies.front());
  for (const auto& w : copies) {
    if (w.grad().defined()) sum += w.grad();
  }
  if (across_ranks) embedding_group->all_reduce(sum);
  // In place where a gradient exists: it may be a view into DDP's bucket (which, with a sharded
  // optimizer, is reduce-scattered after this).
  for (auto w : copies) {
    if (w.grad().defined()) {
      w.mutable_grad().copy_(sum);
    } else {
      w.mutable_grad() = sum.clone();
    }
  }
}

}  // namespace triax
