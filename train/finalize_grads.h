// defines: triax::ModelGrads, triax::finalize_model_grads
//
// Megatron's finalize_model_grads: everything that happens to the gradients between the last
// backward and the optimizer step, in one place and in this order:
//   1. data parallel: wait for the dp reduction that ran during backward (bucketed all-reduce,
//      or the sharded levels' reduce-scatters);
//   2. tensor parallel: sum over tp the gradients each tp rank computed from its part of the
//      sequence (sequence parallelism: LayerNorms, row-parallel biases);
//   3. the tied embedding: sum the copies (this rank's chunks and the embedding group), so both
//      copies take the same step.
// Sums over tp or the embedding group and averages over dp commute, so 1 goes first: its
// buffers are in flight during backward. With ddp.shard (GradientSync::reduces_to_slices) only
// this rank's slices are reduced after 1: 2 and 3 sum the slices (every tp rank's buckets are
// laid out alike, and each tied copy has a bucket of its own, so the slices line up), on 1/dp of
// the bytes; ZeRO-1 and ZeRO-2 then round alike.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/dp/gradient_sync.h"

namespace triax {

/// What the fix-ups act on, gathered once by the trainer from the model's chunks.
struct ModelGrads {
  std::vector<GradientSync*> syncs;             ///< one per chunk
  std::vector<torch::Tensor> sequence_partial;  ///< summed over tp (empty without SP)
  std::vector<torch::Tensor> tied_copies;       ///< this rank's copies of the tied weight
  Communicator* tp = nullptr;
  Communicator* embedding = nullptr;  ///< first + last stage; nullptr elsewhere
};

/// Runs steps 1-4. Returns the seconds the dp syncs waited (exposed communication).
double finalize_model_grads(ModelGrads& grads);

}  // namespace triax
