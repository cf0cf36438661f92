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
// A node arrives in the caller's tensors (the buckets autograd wrote into): a leaf, or a level-1
// node when autograd itself added a pair g(2j) + g(2j+1) into zeroed buckets (0 + a + b is a + b
// exactly). Each sibling already waiting is added into the caller's tensors; a node left without
// its sibling is copied out to wait. So nodes may come in any order (a schedule that runs
// backward passes out of micro-batch order still gets the same tree), the tree keeps one
// partial sum per level when they come in order, and the root forms in the caller's tensors.
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

  /// Adds node (`level`, `index`) — level 0: micro-batch `index`'s gradients; level l: the sum of
  /// micro-batches [index 2^l, (index + 1) 2^l) — held in `node`, whose tensors receive the
  /// waiting siblings' sums. Returns true when `node` now holds the root (the whole tree); else
  /// `node` was copied out and the caller may reuse its tensors.
  bool add(int level, int index, const std::vector<torch::Tensor>& node);
  /// Forgets the waiting nodes (keeps their buffers for the next step).
  void reset();
  int leaves() const { return leaves_; }
  int levels() const { return levels_; }

 private:
  std::vector<torch::Tensor> take_buffer(const std::vector<torch::Tensor>& like);

  int leaves_;
  int levels_ = 0;                                                     // log2(leaves)
  std::map<std::pair<int, int>, std::vector<torch::Tensor>> waiting_;  // (level, index) -> sum
  std::vector<std::vector<torch::Tensor>> spare_;                      // buffers to reuse
};

}  // namespace triax
