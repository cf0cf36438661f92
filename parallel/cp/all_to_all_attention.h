// defines: triax::sequence_to_heads, triax::heads_to_sequence, triax::all_to_all_attention
//
// Context parallelism by all-to-all (DeepSpeed-Ulysses, Jacobs et al. 2023; Megatron's
// cp_comm_type a2a): attention needs every position but not every head, so before it one
// all-to-all turns the sequence split (each rank: all heads, its ContextSplit part) into a head
// split (each rank: heads / C of them, every position in order), attention runs as on one rank,
// and a second all-to-all turns its output back. Each rank moves 3 (q, k, v) + 1 (the output)
// tensors of its part once, whatever C: with many heads it beats the ring, whose traffic grows
// with C; it needs heads (and kv heads) divisible by C.
//
// Rank r of the group takes heads [r * heads / C, (r + 1) * heads / C) of q and the same block
// of the kv heads, so grouped-query attention still pairs each query head with its kv head.
#pragma once

#include <torch/torch.h>

#include <functional>

#include "parallel/comm/communicator.h"
#include "parallel/cp/context_split.h"

namespace triax {

/// [b, heads, s, d], s = split.local_length() -> [b, heads / C, length, d]: this rank's block of
/// heads over the whole sequence in position order. Differentiable (backward: the inverse).
torch::Tensor sequence_to_heads(const torch::Tensor& x, const ContextSplit& split,
                                Communicator& cp);
/// The inverse: [b, heads / C, length, d] -> [b, heads, s, d].
torch::Tensor heads_to_sequence(const torch::Tensor& x, const ContextSplit& split,
                                Communicator& cp);

/// q [b, heads, s, d], k and v [b, kv_heads, s, d] with the sequence split; `attention` computes
/// causal attention of [b, h, length, d] queries over [b, h_kv, length, d] keys and values (the
/// model's own core, as on one rank). Returns [b, heads, s, d].
torch::Tensor all_to_all_attention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const ContextSplit& split, Communicator& cp,
    const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&,
                                      const torch::Tensor&)>& attention);

}  // namespace triax
