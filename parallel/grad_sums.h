// defines: triax::sum_sequence_partial_grads, triax::sum_over_group, triax::sum_tied_grads,
//          triax::sum_tied_slices
//
// The two gradient sums model parallelism adds after backward (train/finalize_grads.h orders
// them with the data-parallel sync):
//  - sequence parallelism: each tp rank computed the gradient of a replicated parameter
//    (LayerNorm, row-parallel bias) from its part of the sequence only; the true gradient is the
//    sum over tp;
//  - a tied weight (the token embedding used again as the output head) has a copy on the first
//    and on the last pipeline stage; each copy's gradient is half the story, so both get the sum
//    of all copies (this rank's chunks, then over the embedding group).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

/// Sums the gradients of `params` over `tp`, in place (one all-reduce for all of them).
void sum_sequence_partial_grads(const std::vector<torch::Tensor>& params, Communicator& tp);

/// Sums the tensors `grads` over `group`, in place (one all-reduce for all of them; none when
/// they are all empty). ZeRO-2 passes the sequence-partial parameters' slices of the gradient
/// shard: every tp rank's buckets are laid out alike, so the slices cover the same elements.
void sum_over_group(const std::vector<torch::Tensor>& grads, Communicator& group);

/// Gives every copy in `copies` (this rank's) the sum of all copies' gradients, here and over
/// `embedding_group` (nullptr on ranks outside it). In place where a gradient exists: it may be a
/// view into DDP's bucket.
void sum_tied_grads(const std::vector<torch::Tensor>& copies, Communicator* embedding_group);

/// The same over gradient slices (ZeRO-2): `slices` are this rank's slices of its copies'
/// gradients, each copy alone in its bucket so that every copy's slice covers the same elements.
void sum_tied_slices(const std::vector<torch::Tensor>& slices, Communicator* embedding_group);

}  // namespace triax
