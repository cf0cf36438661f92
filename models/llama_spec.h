// defines: triax::llama_flops_per_token,
//          triax::llama_spec
//
// The Llama family as a model spec (models/model_spec.h): a chunk is a Llama part holding its
// stage's layers; samples are token sequences as the GPT's (token_batch); evaluation measures the
// held-out loss.
#pragma once

#include <utility>
#include <vector>

#include "models/llama.h"
#include "models/model_spec.h"
#include "models/transformer_chunk.h"

namespace triax {

/// Training FLOPs per token, the matmuls executed (PaLM's convention, as gpt_flops_per_token):
/// 6 x (per layer 2h^2 for q and o, 2h * kv_heads * head_dim for k and v, 3h * intermediate for
/// gate, up and down; h * vocab for the head) + 12 L h T for the attention scores and sums.
double llama_flops_per_token(const ModelConfig& model);

const ModelSpec& llama_spec();

}  // namespace triax
