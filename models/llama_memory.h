// defines: triax::llama_stage_memory
//
// The Llama family's memory per rank by formula: the model spec's `memory`
// (models/model_spec.h), checked by tools/bench/memory.sh against live tensor bytes.
// Formulas (fp32, no dropout, per rank; t = tp, r = 1/t with sequence parallelism else 1,
// b = micro-batch, a = heads, kv = kv_heads x head_dim, I = intermediate_size):
//   parameters: per block 2h^2/t (q, o) + 2h kv/t (k, v) + 3hI/t (gate, up, down) + 2h (norms)
//   (+ (h + 2kv)/t with qkv_bias); the embedding V/t x h on the first stage (and the last when
//   tied); the untied head V/t x h and the final norm h on the last.
//   activations kept for backward per block, in bytes:
//     each RMSNorm its input, the normalised input and its output (the projections' input):
//       2 x 12 sbh r;
//     q: projection, its rotated half and the head-major copy, 12 sbh/t; k: projection and
//       rotated half 8 sb kv/t and the head-major copy repeated over its query group 4 sbh/t;
//       v repeated 4 sbh/t; the softmax output 4 a s^2 b/t; the attention output 4 sbh/t;
//     SwiGLU: gate, silu(gate), up and their product, 16 sbI/t;
//   plus the embedding output 4 sbh r on the first stage; on the last the final norm's 12 sbh r
//   and the logits with their softmax 8 sbV/t; a stage before the last keeps its output and the
//   gradient it receives, 8 sbh r. Recompute as the GPT's (models/gpt_memory.h): full keeps each
//   block's input and one block's worth during its recomputation; selective drops every block's
//   s^2 term but one.
#pragma once

#include <cstdint>

#include "core/config.h"
#include "models/model_spec.h"

namespace triax {

StageMemory llama_stage_memory(const Config& c, int tp, int64_t layers_here, bool first_stage,
                               bool last_stage);

}  // namespace triax
