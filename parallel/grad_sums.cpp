#include "parallel/grad_sums.h"

namespace triax {

void sum_sequence_partial_grads(const std::vector<torch::Tensor>& params, Communicator& tp) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  sum_over_group(grads, tp);
}

void sum_over_group(const std::vector<torch::Tensor>& grads, Communicator& group) {
  int64_t total = 0;
  for (const auto& g : grads) total += g.numel();
  if (total == 0) return;  // every rank of the group holds the same sizes
  // One all-reduce for all of them (they are small: norms and biases).
  std::vector<torch::Tensor> flat;
  for (auto& g : grads) flat.push_back(g.reshape({-1}));
  torch::Tensor sum = torch::cat(flat);
  group.all_reduce(sum, ReduceOp::kSum);
  int64_t offset = 0;
  for (auto g : grads) {
    g.copy_(sum.narrow(0, offset, g.numel()).view(g.sizes()));
    offset += g.numel();
  }
}

void sum_tied_slices(const std::vector<torch::Tensor>& slices, Communicator* embedding_group) {
  if (slices.empty() || slices.front().numel() == 0) return;  // alike on every copy's rank
  const bool across_ranks = embedding_group != nullptr && embedding_group->size() > 1;
  if (slices.size() == 1 && !across_ranks) return;
  torch::Tensor sum = torch::zeros_like(slices.front());
  for (const auto& s : slices) sum += s;
  if (across_ranks) embedding_group->all_reduce(sum);
  for (auto s : slices) s.copy_(sum);
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
