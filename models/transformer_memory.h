// defines: triax::transformer_stage_memory
//
// A transformer's memory per rank by formula, for either family: the model spec's `memory`
// (models/model_spec.h), which tools/bench/memory.sh checks against live tensor bytes and the
// planner uses. fp32, dropout 0, per rank; t = tp, r = 1/t with sequence parallelism (training,
// tp > 1) else 1, s = seq_len, b = micro-batch, a = heads, kv = kv_heads x head_dim (h without
// grouped-query attention), I = the MLP's width (GELU: 4h).
//   parameters, 4 bytes each (the optimizer's share is the optimizer's): per block the attention
//   2h^2/t + 2h kv/t, the MLP 2hI/t (GELU) or 3hI/t (SwiGLU), two norms of 2h (LayerNorm) or h
//   (RMSNorm); biases: q/k/v (h + 2kv)/t, with linear biases the attention output's h and the
//   MLP's I/t + h. The embedding V/t x h on the first stage (and on the last when tied), learned
//   positions s x h on the first; the final norm and an untied head V/t x h on the last.
//   activations kept for backward per block, bytes per s x b (Korthikanti et al. 2022's
//   sbh(34 + 5as/h), 16-bit with dropout masks, rewritten for what this implementation keeps in
//   fp32 without dropout):
//     each norm its input and output (LayerNorm) or its input, the normalised input and the
//       output (RMSNorm): 2 x 8h r or 2 x 12h r;
//     attention: fused q|k|v and the attention output 16h/t; with grouped q, k, v and rotary
//       positions, q three times (projection, rotated, head-major copy) 12h/t, k twice
//       (projection, rotated) 8kv/t and repeated over its query group 4h/t, v repeated 4h/t and
//       the attention output 4h/t; the softmax output 4as^2 b/t in both;
//     the MLP: GELU's input and output 8I/t; SwiGLU's gate, silu(gate), up and their product
//       16I/t;
//   plus the embedding output 4 sbh r on the first stage; on the last the final norm's and the
//   logits with their softmax 8 sbV/t; a stage before the last keeps its output and the gradient
//   it receives, 8 sbh r.
//   Selective recompute drops each block's s^2 term but one; full recompute keeps each block's
//   input (4sbh r), and one block's worth plus the gradient arriving at it (4sbh r) during its
//   recomputation; under sequence parallelism, with fused q|k|v, a recomputed block's backward
//   also holds, for a moment, its gathered input, the whole-sequence input gradient and that
//   gradient's copy for the reduce-scatter (3 x 4sbh; measured, see the .cpp).
//   Split backward (zero-bubble schedules) defers per block the gradients of the two norms'
//   outputs (split by sequence parallelism), of q/k/v and the MLP's first matmuls (split by tp)
//   and of the two row-parallel outputs (whole); the final norm's and the head's on the last.
#pragma once

#include <cstdint>

#include "core/config.h"
#include "models/model_spec.h"
#include "models/transformer.h"

namespace triax {

/// This rank's parameter bytes and peak activation bytes, holding `layers_here` layers of the
/// transformer `o` (and the embedding on the first stage, the final norm and head on the last)
/// at tensor parallelism `tp`, with `c`'s micro-batch, recompute and sequence parallelism.
StageMemory transformer_stage_memory(const TransformerOptions& o, const Config& c, int tp,
                                     int64_t layers_here, bool first_stage, bool last_stage);

/// The memory of the family whose preset `Preset` reads c.model (ModelSpec::memory).
template <typename Preset>
StageMemory transformer_stage_memory(const Config& c, int tp, int64_t layers_here, bool first_stage,
                                     bool last_stage) {
  return transformer_stage_memory(Preset::from_config(c.model, 0), c, tp, layers_here, first_stage,
                                  last_stage);
}

}  // namespace triax
