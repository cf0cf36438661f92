// defines: triax::token_batch, triax::gpt_spec
//
// The GPT as a model spec (models/model_spec.h): a chunk is a Gpt part holding its stage's layers
// (models/transformer_stages.h); samples are token sequences of seq_len + 1, whose first seq_len
// tokens are the inputs and whose last seq_len the targets; evaluation measures the held-out loss.
#pragma once

#include "models/gpt.h"
#include "models/model_spec.h"
#include "models/transformer_chunk.h"

namespace triax {

/// Token sequences [n, seq_len + 1] as a batch: inputs tokens[:, :-1], targets tokens[:, 1:].
Batch token_batch(const torch::Tensor& tokens);

/// A global batch of random tokens for `config` (the benchmarks' data): global_batch sequences
/// of seq_len + 1 tokens below model.vocab, the same for the same `step` on every rank.
Batch random_token_batch(const Config& config, int step);

const ModelSpec& gpt_spec();

}  // namespace triax
