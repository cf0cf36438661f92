// defines: triax::MicrobatchTree
//
// Note [Micro-batch tree]
// Layout-invariant numerics (docs/numerics.md) add the gradients of a global batch's M
// micro-batches in one association fixed by the global batch alone: the left-balanced binary
// tree over the global micro-batch index, tree(0, n) = tree(0, 2^k) + tree(2^k, n) with 2^k the
// largest power of two below n (((g0 + g1) + (g2 + g3)) + (g4 + g5) at n = 6; perfect when n is
// a power of two), the shape of tree_all_reduce's tree over ranks. Autograd would add them into
// .grad in backward order, g0 + g1 + g2 + ... one after the other, and that order changes with
// the schedule (interleaved, ZB-V's W passes), and the split between ranks changes with dp.
// A rank holds the aligned block [r m, (r + 1) m) of the global micro-batches (the block deal of
// DistributedSampler::block_rows), m a power of two when dp > 1: its tree over local index j is
// then exactly the global tree's subtree over that block (every split of the tree over n = dp m
// leaves falls on a multiple of m), and the tree over ranks (tree_all_reduce, Note [Tree
// all-reduce]) finishes it: dp 3 with m = 2 gives one process's bits with 6 micro-batches.
// A node arrives in the caller's tensors (the buckets autograd wrote into): a leaf, or a pair's
// node when autograd itself added g(2j) + g(2j+1) into zeroed buckets (0 + a + b is a + b
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
  /// A tree over `leaves` (>= 1) micro-batches.
  explicit MicrobatchTree(int leaves);

  /// Whether micro-batches [lo, hi) are one node of the tree ([j, j + 1): a leaf).
  bool is_node(int lo, int hi) const;
  /// Adds node [lo, hi) — the sum of those micro-batches' gradients — held in `node`, whose
  /// tensors receive the waiting siblings' sums. Returns true when `node` now holds the root (the
  /// whole tree); else `node` was copied out and the caller may reuse its tensors.
  bool add(int lo, int hi, const std::vector<torch::Tensor>& node);
  /// Forgets the waiting nodes (keeps their buffers for the next step).
  void reset();
  int leaves() const { return leaves_; }

 private:
  std::vector<torch::Tensor> take_buffer(const std::vector<torch::Tensor>& like);
  /// The sibling of node [lo, hi) (not the root), found by descending from the root.
  std::pair<int, int> sibling(int lo, int hi) const;

  int leaves_;
  std::map<std::pair<int, int>, std::vector<torch::Tensor>> waiting_;  // [lo, hi) -> sum
  std::vector<std::vector<torch::Tensor>> spare_;                      // buffers to reuse
};

}  // namespace triax
