// defines: triax::LlamaOptions, triax::Llama, triax::LlamaImpl, triax::check_llama_layout,
//          triax::llama_intermediate_size
//
// The Llama family's decoder, a preset of the one transformer (models/transformer.h) (Llama 2/3,
// Mistral without its sliding window, Qwen2 with q/k/v bias), in Hugging Face's semantics
// (transformers' modeling_llama.py), built from its tensor-parallel layers:
//   h = tok_emb[ids]                                              VocabParallelEmbedding
//   per layer: h = h + o_proj(attn(rope(q), rope(k), v))  on  n = RMSNorm(h)
//              q = q_proj(n) [H heads], k = k_proj(n), v = v_proj(n) [KV heads; query head j
//              reads kv head j / (H / KV): grouped-query attention]
//              h = h + down_proj(silu(gate_proj(n')) * up_proj(n'))  on  n' = RMSNorm(h)
//   logits = RMSNorm(h) @ W_out^T   (untied head, or the embedding when tied)
//   RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight, computed in fp32
//   rope: x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1] (x = [x1, x2] halves), with
//   inverse frequencies theta^(-2i/d), optionally Llama 3.1-scaled (rope_inverse_frequencies).
// Tensor parallelism as Megatron and torchtitan shard it: q/k/v and gate/up column-parallel (each
// rank holds whole heads: H/tp query heads and the KV/tp kv heads they read), o and down
// row-parallel, vocabulary-parallel embedding, head and cross-entropy. Sequence parallelism keeps
// the norms and residuals on each rank's part of the sequence (their weights' gradients summed
// over tp). Parts are seeded per (seed, layer) like the GPT's (models/part_seed.h), and named by
// global layer index ("layer3.q_proj.weight"), so any stage split and tp layout starts from the
// same numbers.
#pragma once

#include "core/config.h"
#include "models/model_keys.h"
#include "models/rms_norm.h"
#include "models/rotary.h"
#include "models/transformer.h"

namespace triax {

/// Throws ConfigError (every rank, before communication) when the Llama of `config` cannot be
/// laid out: the GPT's rules (heads, tp, sequence, stages) plus kv_heads dividing heads and tp
/// dividing kv_heads.
void check_llama_layout(const Config& config);

struct LlamaOptions : TransformerOptions {
  LlamaOptions();  ///< the preset, at the default sizes (4 heads, 4 kv heads, SwiGLU width 352)

  /// The whole model of the `model:` section (kv_heads 0 = heads; intermediate_size 0 = the
  /// multiple-of rule), with `seed`; `keys` records each model.* key read (models/model_keys.h).
  static LlamaOptions from_config(const ModelConfig& model, uint64_t seed,
                                  ModelKeys* keys = nullptr);
};

/// Llama's SwiGLU width rule: 2/3 of 4 x hidden, rounded up to a multiple of `multiple_of`
/// (11008 for Llama 2 7B: hidden 4096, multiple_of 256).
int64_t llama_intermediate_size(int64_t hidden, int64_t multiple_of);

using LlamaImpl = TransformerImpl;
using Llama = Transformer;

}  // namespace triax
