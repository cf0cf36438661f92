// defines: triax::MicrobatchTree
//
// Note [Micro-batch tree]
// Layout-invariant numerics (docs/numerics.md) add the gradients of a global batch's M
// micro-batches in one association fixed by the global batch alone: the perfect binary tree over
// the global micro-batch index, ((g0 + g1) + (g2 + g3)) + ... Autograd would add them into .grad
// in backward order, g0 + g1 + g2 + ... one after the other, and that order changes with the
// schedule (interleaved, ZB-V's W passes), and the split between ranks changes with dp.
// A rank holds the aligned block [r m, (r + 1) m) of the global micro-batches (the block deal of
// DistributedSampler::block_rows), m a power of two: its tree over local index j is exactly the
// global tree's subtree over that block, and the tree over ranks (tree_all_reduce, Note [Tree
// all-reduce]) finishes it.
// Each micro-batch's gradients arrive as a leaf (copied out of the buffers autograd wrote them
// into); a node is formed as soon as both its children are there, so leaves may come in any
// order (a schedule that runs backward passes out of micro-batch order still gets the same
// tree), and the tree keeps one partial sum per level when they come in order.
// Two operands commute exactly in IEEE arithmetic, so only the association matters.
#pragma once

#include <torch/torch.h>

#include <map>
#include <utility>
#include <vector>

namespace triax {

class MicrobatchTree {
 public:
  /// A tree over `leaves` micro-batches (a power of two, >= 1).
  explicit MicrobatchTree(int leaves);

  /// Adds micro-batch `index`'s tensors (copied; each the shape of the others' at its position).
  void add(int index, const std::vector<torch::Tensor>& leaf);
  /// Every leaf arrived.
  bool complete() const;
  /// The root (after every leaf): the tensors' sums, in the tree's association. Valid until the
  /// next add() after reset().
  const std::vector<torch::Tensor>& root() const;
  /// Forgets the sums (keeps the buffers for the next step).
  void reset();
  int leaves() const { return leaves_; }

 private:
  std::vector<torch::Tensor> take_buffer(const std::vector<torch::Tensor>& like);

  int leaves_;
  int levels_ = 0;                                                   // log2(leaves)
  std::map<std::pair<int, int>, std::vector<torch::Tensor>> nodes_;  // (level, index) -> sum
  std::vector<std::vector<torch::Tensor>> spare_;                    // buffers to reuse
};

}  // namespace triax
