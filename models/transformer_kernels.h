// defines: triax::transformer_kernels
//
// The kernels of a transformer of either family (models/kernel_work.h), as triax runs them:
// per layer a norm, the q/k/v projection (its kv part grouped-query sized), rotary embedding
// (Llama), scores per head [s, d] x [d, s], masked softmax, attention dropout (when
// model.dropout > 0), the weighted sum [s, s] x [s, d], the output projection, a residual add
// (with dropout), a norm, the MLP (GELU: fc, activation, fc_out; SwiGLU: gate and up, SiLU x up,
// down) and a residual add. Attention is the unfused s x s form (no flash attention): its scores
// and probabilities pass through memory. The first stage adds the embedding lookup (and learned
// positions); the last the final norm, the head's matmul and the cross-entropy over the logits
// (fp32). Biases ride in their matmul's epilogue and are not counted.
#pragma once

#include "models/kernel_work.h"
#include "models/transformer.h"

namespace triax {

StageKernels transformer_kernels(const TransformerOptions& options, const KernelShape& shape);

/// The kernels of the family whose preset `Preset` reads `model` (ModelSpec::kernels).
template <typename Preset>
StageKernels transformer_kernels(const ModelConfig& model, const KernelShape& shape) {
  return transformer_kernels(Preset::from_config(model, 0), shape);
}

}  // namespace triax
