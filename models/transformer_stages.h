// defines: triax::split_layers, triax::all_reduce_tied_embedding_grads
//
// Cutting the transformer (GPT, Llama) into pipeline chunks (a chunk's options:
// stage_options in models/transformer_chunk.h). With p pipeline ranks and v chunks per rank there
// are p * v stages; stage s holds a contiguous range of layers, the embedding if s = 0, and the
// final norm, head and loss if s = p*v - 1. With a tied embedding, the first and last stages both
// hold the token embedding; after backward their gradients are summed over the embedding group so
// both copies take the same step.
#pragma once

#include <utility>
#include <vector>

#include "models/transformer.h"
#include "parallel/comm/communicator.h"

namespace triax {

/// Layer ranges [first, last) of `parts` stages. Without `boundaries` they are balanced by layer
/// count (the first layers % parts stages get one more); otherwise `boundaries` lists the first
/// layer of stages 1 .. parts-1. Throws ConfigError (naming schedule.layer_boundaries) when the
/// boundaries do not cut `layers` into `parts` non-empty ranges.
std::vector<std::pair<int64_t, int64_t>> split_layers(int64_t layers, int parts,
                                                      const std::vector<int64_t>& boundaries = {});

/// Sums the token-embedding gradients of this rank's chunks and over `embedding_group` (the
/// ranks of the first and last stages; nullptr on other ranks), and gives every copy the sum
/// (parallel/grad_sums.h; the trainer does this in finalize_model_grads). Does nothing for an
/// untied model.
void all_reduce_tied_embedding_grads(std::vector<Transformer>& chunks,
                                     Communicator* embedding_group);

}  // namespace triax
