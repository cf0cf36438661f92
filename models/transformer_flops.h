// defines: triax::transformer_flops_per_token
//
// Training FLOPs per token of a transformer of either family, for tokens/s -> FLOP/s -> MFU.
// Counted as the matmuls really executed (PaLM's appendix B convention), forward + backward =
// 3 x forward:
//   6 * (L * (2h^2 + 2h kv + m h I) + h V)
//        per layer: q and the attention output h x h each, k and v h x kv each (kv = kv_heads x
//        head_dim; h without grouped-query attention), the MLP's m matrices of h x I (GELU: fc
//        and fc_out, m = 2, I = 4h; SwiGLU: gate, up and down, m = 3); the output head (a
//        matmul even when tied to the embedding; the embedding lookup is not)
//   + 12 L h T   attention scores and weighted sums over T = seq_len positions (counted in full,
//                as is the convention, although causal masking could skip half)
// Biases, norms, rotations, softmax and the loss are left out (well under 1% here). The GPT's
// count is thus 6 (12 L h^2 + h V) + 12 L h T.
#pragma once

#include "models/transformer.h"

namespace triax {

double transformer_flops_per_token(const TransformerOptions& o);

/// The count for the family whose preset `Preset` (GptOptions, LlamaOptions) reads `model`
/// (ModelSpec::flops_per_unit).
template <typename Preset>
double transformer_flops_per_token(const ModelConfig& model) {
  return transformer_flops_per_token(Preset::from_config(model, 0));
}

}  // namespace triax
