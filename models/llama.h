// defines: triax::LlamaOptions, triax::RmsNormImpl, triax::RmsNorm, triax::LlamaBlockImpl,
//          triax::LlamaImpl, triax::Llama, triax::check_llama_layout,
//          triax::rope_inverse_frequencies
//
// The Llama family's decoder (Llama 2/3, Mistral without its sliding window, Qwen2 with q/k/v
// bias), in Hugging Face's semantics (transformers' modeling_llama.py), built from
// tensor-parallel layers:
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

#include <torch/torch.h>

#include "core/config.h"
#include "models/lm_head.h"
#include "models/model_keys.h"
#include "parallel/comm/communicator.h"
#include "parallel/tp/column_parallel_linear.h"
#include "parallel/tp/row_parallel_linear.h"
#include "parallel/tp/tp_dropout.h"
#include "parallel/tp/vocab_parallel_embedding.h"

namespace triax {

/// Throws ConfigError (every rank, before communication) when the Llama of `config` cannot be
/// laid out: the GPT's rules (heads, tp, sequence, stages) plus kv_heads dividing heads and tp
/// dividing kv_heads.
void check_llama_layout(const Config& config);

struct LlamaOptions {
  int64_t vocab = 256;
  int64_t hidden = 128;
  int64_t heads = 4;
  int64_t kv_heads = 4;        ///< grouped-query attention: heads % kv_heads == 0
  int64_t intermediate = 352;  ///< SwiGLU width
  int64_t layers = 4;
  int64_t seq_len = 64;  ///< longest sequence (the rotary tables' length)
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  double rope_scaling_factor = 0.0;  ///< Llama 3.1 scaling; 0 = none
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int64_t rope_original_max_positions = 8192;
  bool qkv_bias = false;
  bool tie_embeddings = false;
  double dropout = 0.0;  ///< attention probabilities and residual branches (Llama: none)
  uint64_t seed = 1234;
  int64_t first_layer = 0;
  int64_t last_layer = -1;  ///< -1 = layers
  bool has_embedding = true;
  bool has_head = true;
  Recompute recompute = Recompute::kNone;
  int64_t recompute_layers = 0;
  bool sequence_parallel = false;

  /// The whole model of the `model:` section (kv_heads 0 = heads; intermediate_size 0 = the
  /// multiple-of rule), with `seed`; `keys` records each model.* key read (models/model_keys.h).
  static LlamaOptions from_config(const ModelConfig& model, uint64_t seed,
                                  ModelKeys* keys = nullptr);
};

/// Llama's SwiGLU width rule: 2/3 of 4 x hidden, rounded up to a multiple of `multiple_of`
/// (11008 for Llama 2 7B: hidden 4096, multiple_of 256).
int64_t llama_intermediate_size(int64_t hidden, int64_t multiple_of);

/// theta^(-2i/d) for i < d/2, with Llama 3.1's scaling when factor > 0: wavelengths longer than
/// original / low_freq_factor divided by factor, shorter than original / high_freq_factor kept,
/// and smoothly interpolated between.
torch::Tensor rope_inverse_frequencies(const LlamaOptions& options, int64_t head_dim);

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t features, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

class LlamaBlockImpl : public torch::nn::Module {
 public:
  LlamaBlockImpl(const LlamaOptions& options, Communicator& tp, TpDropout& dropout);
  /// `cos`, `sin`: [s, head_dim] rotary tables of the whole sequence.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  /// Weights whose gradients are partial per tp rank under sequence parallelism (the norms).
  std::vector<torch::Tensor> sequence_partial_parameters();

 private:
  torch::Tensor attention(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin);
  torch::Tensor mlp(const torch::Tensor& x);
  bool sequence_parallel() const;
  LlamaOptions options_;
  TpDropout* dropout_;
  Communicator* tp_;
  int64_t local_heads_, local_kv_heads_, head_dim_;
  CausalBias causal_bias_;
  RmsNorm input_norm{nullptr}, post_attention_norm{nullptr};
  ColumnParallelLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr};
  ColumnParallelLinear gate_proj{nullptr}, up_proj{nullptr};
  RowParallelLinear o_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LlamaBlock);

class LlamaImpl : public torch::nn::Module {
 public:
  LlamaImpl(const LlamaOptions& options, Communicator& tp);
  /// ids [b, s] -> [b, s, hidden] (this rank's [b, s/tp, hidden] under sequence parallelism).
  torch::Tensor embed(const torch::Tensor& ids);
  torch::Tensor run_layers(torch::Tensor h);
  /// Final norm and head -> this rank's logits [b, s, padded_vocab / tp].
  torch::Tensor local_logits(const torch::Tensor& h);
  /// Mean cross-entropy over tokens != ignore_index (needs has_head).
  torch::Tensor loss_from_hidden(const torch::Tensor& h, const torch::Tensor& targets,
                                 int64_t ignore_index = -100);
  /// The whole model: ids and targets [b, s] -> mean loss (needs both ends).
  torch::Tensor loss(const torch::Tensor& ids, const torch::Tensor& targets);
  /// Logits [b, s, vocab] gathered over tp (generation, tests).
  torch::Tensor logits_from_hidden(const torch::Tensor& h);
  TpDropout& dropout() { return *dropout_; }
  const LlamaOptions& options() const { return options_; }
  bool sequence_parallel() const;
  std::vector<torch::Tensor> sequence_partial_parameters();

 private:
  LlamaOptions options_;
  Communicator* tp_;
  std::unique_ptr<TpDropout> dropout_;
  torch::Tensor inv_freq_;
  torch::Tensor cos_, sin_;  // [seq_len, head_dim], built once
  VocabParallelEmbedding token_embedding{nullptr};
  std::vector<LlamaBlock> blocks_;
  RmsNorm final_norm{nullptr};
  ColumnParallelLinear head{nullptr};
};
TORCH_MODULE(Llama);

}  // namespace triax
