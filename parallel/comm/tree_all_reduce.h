// defines: triax::tree_all_reduce, triax::tree_sum, triax::tree_sum_numbers
//
// Note [Tree all-reduce]
// A sum over ranks whose association is fixed by the number of ranks alone: the left-balanced
// binary tree over rank index, tree(0, n) = tree(0, 2^k) + tree(2^k, n) with 2^k the largest power
// of two below n (so ((r0 + r1) + (r2 + r3)) at n = 4, ((r0 + r1) + r2) at n = 3). MPI's and
// Gloo's all-reduce choose their association by message size and algorithm, so the same inputs
// can give sums a few ulps apart on another group size or another run; this one gives the same
// bits on every rank, in every run, and equal to tree_sum of the same parts on one process.
// It is the upper levels of the canonical sum of layout-invariant numerics (issue 40): when each
// of n ranks holds the tree sum of an aligned block of 2^j micro-batches, the tree over ranks
// continues the tree over micro-batches exactly.
// Power-of-two groups run recursive halving (a reduce-scatter: partner rank xor 2^j, each keeps
// half of its window and adds the partner's copy of it) then recursive doubling (the
// all-gather): the ring's bandwidth, 2 (n-1)/n of the tensor sent per rank, in 2 log2 n rounds.
// Two operands commute exactly in IEEE arithmetic, so each level's sum is the tree's node
// whichever rank computes it. Other sizes reduce the two subtrees apart, then each right rank
// sends its whole sum to the left ranks it serves and gets the total back: a fallback whose
// busiest rank sends up to 2^k whole tensors at n = 2^k + 1.
// One call at a time per communicator: its messages carry fixed tags (0x5400 up), so two calls
// in flight on one communicator from two threads, or point-to-point traffic of the caller's with
// such tags, would cross.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

/// Sums `tensor` over `comm`'s ranks in place (Note [Tree all-reduce]). Floating dtypes; the
/// tensor may be non-contiguous. Every rank of `comm` must call it with the same shape and dtype.
void tree_all_reduce(Communicator& comm, torch::Tensor tensor);

/// The same association on one process: parts[r] plays rank r's tensor.
torch::Tensor tree_sum(const std::vector<torch::Tensor>& parts);

/// The same association over numbers (layout-invariant numerics' loss over micro-batches).
double tree_sum_numbers(const std::vector<double>& values);

}  // namespace triax
