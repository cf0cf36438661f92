// defines: triax::ring_attention
//
// Causal attention over sequences split across a context-parallel group (ContextSplit's
// head-tail chunks): each rank computes its queries against the keys and values it holds, passes
// those to the next rank of the ring and takes the previous rank's, C times (Liu et al. 2023,
// "Ring Attention with Blockwise Transformers for Near-Infinite Context"; Megatron's cp_comm_type
// p2p). Only the kv heads travel (grouped-query attention expands them on arrival), and the next
// block's exchange is posted before this block's compute.
//
// The blocks are merged by the online softmax (Milakov & Gimelshein 2018; FlashAttention's
// forward): per query a running maximum m, sum l and unnormalised output o; a block of scores s
// becomes m' = max(m, max s), l' = l e^(m-m') + sum e^(s-m'), o' = o e^(m-m') + e^(s-m') v, and the
// output is o / l. Backward recomputes each block's probabilities from the saved log-sum-exp
// (m + log l) and passes each kv block's gradient around the ring with the block, so it arrives
// back at its owner after C steps (FlashAttention's backward, blockwise), each pass beside the
// next block's compute.
//
// With chunks a (queries) and e (keys) of the 2C, a pair is full (e < a), causal (e == a, the
// diagonal) or skipped (e > a); with the head-tail split every rank computes the same number of
// pairs each step: the ring is balanced. Arithmetic is fp32 whatever the inputs' dtype; the
// merge order is fixed (ring step, then chunk), so a run repeats bit for bit.
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"
#include "parallel/cp/context_split.h"

namespace triax {

/// q [b, heads, s, d]; k, v [b, kv_heads, s, d] (query head j reads kv head j / (heads /
/// kv_heads)); s = split.local_length(), this rank's part. `cp` is the context-parallel group
/// (split.size() ranks, split.rank() this one). Returns [b, heads, s, d] in q's dtype: each query
/// attends to every position at or before its own, scaled by `scale` (usually 1/sqrt(d)).
/// Differentiable in q, k and v; every rank of `cp` must call it (forward and backward) together.
torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const ContextSplit& split, Communicator& cp, double scale);

}  // namespace triax
