// defines: triax::checkpointed, triax::Recomputed
//
// Activation checkpointing (recompute): run `fn` on up to three inputs without keeping anything
// it computes for backward, only its inputs; in backward, run it again with autograd on and
// backpropagate through that copy (Megatron's and PyTorch's reentrant checkpoint). Dropout
// inside `fn` must drop the same elements both times, so the dropout streams' positions are
// captured before the first run, put back for the recomputation, and then restored to where
// they had moved since (other micro-batches' forwards run in between under 1F1B). Collectives
// inside `fn` (tensor-parallel all-reduces) run again in backward, in the same order on every
// rank. Parameters' gradients accumulate during the inner backward, so gradient hooks (DDP)
// fire as usual.
#pragma once

#include <torch/torch.h>

#include <functional>

#include "parallel/tp/tp_dropout.h"

namespace triax {

using Recomputed =
    std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;

/// fn(a, b, c) without storing its activations; b and c may be undefined. Without autograd
/// (evaluation, no input needing a gradient) it simply runs fn.
torch::Tensor checkpointed(const Recomputed& fn, TpDropout& dropout, const torch::Tensor& a,
                           const torch::Tensor& b = {}, const torch::Tensor& c = {});

}  // namespace triax
