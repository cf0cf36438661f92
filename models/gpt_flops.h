// defines: triax::gpt_flops_per_token
//
// Training FLOPs per token of the GPT, for tokens/s -> FLOP/s -> MFU. Counted as the matmuls
// really executed (PaLM's appendix B convention), forward + backward = 3 x forward:
//   6 * (12 L h^2 + h V)   the layers' QKV, output, and two MLP matrices, and the output head
//                          (a matmul even when tied to the embedding; the embedding lookup is not)
//   + 12 L h T             attention scores and weighted sums over T = seq_len positions
//                          (counted in full, as is the convention, although causal masking could
//                          skip half)
// Biases, norms, softmax and the loss are left out (well under 1% here).
#pragma once

#include "core/config.h"

namespace triax {

double gpt_flops_per_token(const ModelConfig& model);

}  // namespace triax
