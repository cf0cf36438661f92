// defines: triax::llama_spec
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

const ModelSpec& llama_spec();

}  // namespace triax
