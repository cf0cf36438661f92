// The tiny Llama that the multi-rank tests train in every layout: the tiny GPT's sizes and batches
// (support/tiny_gpt.h) with 4 query heads reading 2 kv heads (tp = 2 holds one kv head per rank),
// SwiGLU width 24, an untied head, and RoPE with Llama 3.1 scaling whose cut-offs fall inside the
// 8 positions, so the scaled frequencies are exercised.
#pragma once

#include <string>

#include "support/tiny_gpt.h"

namespace triax::testing {

inline Config tiny_llama_config(int tp, int pp, const std::string& schedule, int chunks) {
  Config c = tiny_gpt_config(tp, pp, schedule, chunks);
  c.model.arch = ModelKind::kLlama;
  c.model.kv_heads = 2;
  c.model.intermediate_size = 24;
  c.model.tie_embeddings = false;
  c.model.rope_scaling_factor = 8;
  c.model.rope_original_max_positions = 4;
  return c;
}

}  // namespace triax::testing
