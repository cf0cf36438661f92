// defines: triax::gpt_stage_memory
//
// The GPT's memory per rank by formula: the model spec's `memory` (models/model_spec.h), which
// tools/bench/memory.sh checks against live tensor bytes and the planner uses.
// Formulas (fp32, dropout 0, per rank; a = heads, t = tp, b = micro-batch):
//   parameters 4 bytes each, gradients 4, AdamW 8 (two moments): 16 bytes per parameter;
//   activations per block, Korthikanti et al. 2022's sbh(34 + 5as/h) (16-bit, with dropout masks)
//   rewritten for what this implementation keeps in fp32 without dropout: sbh(16 + 48/t) +
//   4as^2b/t bytes (LayerNorm inputs and the replicated inputs of the column-parallel layers 16;
//   q, k, v 12/t, attention output 4/t, GELU input and output 32/t; softmax output 4as^2b/t),
//   plus the embedding output, the final norm and the logits with their softmax: 12sbh + 8sbV/t;
//   a pipeline stage before the last keeps its output and the gradient it receives: 8sbh.
//   Sequence parallelism (parallel.sequence) divides every sbh term above by t as well: the
//   column-parallel layers keep their input's local part and gather it again in backward.
//   selective recompute drops each block's s^2 term but one; full recompute keeps each block's
//   input (4sbh), and one block's worth plus the gradient arriving at it (4sbh) during its
//   recomputation.
#pragma once

#include <cstdint>

#include "core/config.h"
#include "models/model_spec.h"

namespace triax {

/// This rank's parameter bytes and peak activation bytes, holding `layers_here` layers (and the
/// embedding on the first stage, the final norm and head on the last) at tensor parallelism `tp`.
StageMemory gpt_stage_memory(const Config& c, int tp, int64_t layers_here, bool first_stage,
                             bool last_stage);

}  // namespace triax
