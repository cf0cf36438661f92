// defines: triax::NormKind, triax::PositionKind, triax::MlpKind, triax::TransformerOptions,
//          triax::TransformerBlockImpl, triax::TransformerBlock, triax::TransformerImpl,
//          triax::Transformer
//
// One decoder-only, pre-norm transformer built from tensor-parallel layers; the GPT and the Llama
// are two presets of its options (models/gpt.h, models/llama.h), chosen by model.arch:
//   h = dropout(tok_emb[ids] (+ pos_emb[0..s) with learned positions))
//   per layer: h = h + dropout(out(attn(norm1(h))))       q/k/v column-parallel, out row-parallel
//              h = h + dropout(mlp(norm2(h)))             in column-parallel, out row-parallel
//   logits = norm(h) @ W_out^T, W_out = tok_emb (tied) or a column-parallel head
// The family's terms are options: the norm (LayerNorm | RMSNorm), positions (learned | rotary,
// with Llama 3.1 scaling), attention (one fused qkv projection | q, k, v with grouped-query kv
// heads and optional biases), the MLP (GELU | tanh GELU | SwiGLU), biases on the other
// projections, a tied head. A new family is a preset; a new term (another norm, an MoE MLP) is
// one option here and its branch in transformer.cpp.
//
// Tensor parallelism as Megatron shards it: each rank holds heads/tp query heads and the
// kv_heads/tp kv heads they read, the MLP's columns, a vocabulary slice of embedding, head and
// cross-entropy. Sequence parallelism keeps norms, dropout and residuals on each rank's part of
// the sequence (their parameters' gradients summed over tp). A TransformerImpl can hold only a
// contiguous range of layers [first_layer, last_layer), plus the embedding (has_embedding) and
// the final norm and head (has_head), so pipeline stages build only their own part. Parameters
// are named by global layer index with the family's names ("layer3.fc.weight",
// "layer3.q_proj.weight"), and every part is initialised from a seed derived from (seed, its
// layer) (models/part_seed.h): the numbers do not depend on which stage or tp layout built them.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "models/lm_head.h"
#include "models/model_keys.h"
#include "parallel/comm/communicator.h"
#include "parallel/cp/context_split.h"
#include "parallel/dp/parameter_gate.h"
#include "parallel/tp/column_parallel_linear.h"
#include "parallel/tp/row_parallel_linear.h"
#include "parallel/tp/tp_dropout.h"
#include "parallel/tp/vocab_parallel_embedding.h"

namespace triax {

enum class NormKind { kLayerNorm, kRmsNorm };
enum class PositionKind { kLearned, kRotary };
enum class MlpKind { kGelu, kGeluTanh, kSwiGlu };

/// The parameter names of a family's block (checkpoints and Hugging Face tables use them).
struct BlockNames {
  const char* norm1;
  const char* qkv;  ///< the fused projection (fused_qkv)
  const char* q;
  const char* k;
  const char* v;
  const char* out;
  const char* norm2;
  const char* mlp_gate;  ///< SwiGLU's gate
  const char* mlp_in;
  const char* mlp_out;
};

struct TransformerOptions {
  int64_t vocab = 256;   ///< real vocabulary
  int64_t hidden = 128;  ///< features per token
  int64_t heads = 4;     ///< query heads (all tp ranks together)
  int64_t kv_heads = 0;  ///< key/value heads (grouped-query attention); 0 = heads
  /// The MLP's hidden width; 0 = 4 x hidden.
  int64_t intermediate = 0;
  int64_t layers = 4;    ///< layers of the whole model
  int64_t seq_len = 64;  ///< longest sequence (learned positions, rotary tables)

  // The family's terms.
  NormKind norm = NormKind::kLayerNorm;
  double norm_eps = 1e-5;
  PositionKind positions = PositionKind::kLearned;
  double rope_theta = 10000.0;
  double rope_scaling_factor = 0.0;  ///< Llama 3.1 scaling; 0 = none
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int64_t rope_original_max_positions = 8192;
  bool fused_qkv = true;    ///< one qkv projection (stride 3) rather than q, k and v
  bool qkv_bias = true;     ///< biases on the q/k/v projections
  bool linear_bias = true;  ///< biases on the attention output and the MLP's projections
  MlpKind mlp = MlpKind::kGelu;
  bool tie_embeddings = true;  ///< output projection = token embedding
  BlockNames names{"ln1", "qkv", "q", "k", "v", "proj", "ln2", "gate", "fc", "fc_out"};

  double dropout = 0.0;       ///< embeddings, attention probabilities and residual branches
  uint64_t seed = 1234;       ///< initial weights and dropout streams
  int64_t first_layer = 0;    ///< first layer this part holds
  int64_t last_layer = -1;    ///< one past its last layer; -1 = layers
  bool has_embedding = true;  ///< holds the embeddings (first pipeline stage)
  bool has_head = true;       ///< holds final norm, head and loss (last pipeline stage)
  /// Activation recompute (train.recompute): none; full: the first `recompute_layers` blocks
  /// of this part (0 = all) keep only their input and run again in backward; selective: every
  /// block recomputes its attention core (scores, softmax, dropout: the s^2 activations).
  Recompute recompute = Recompute::kNone;
  int64_t recompute_layers = 0;
  /// parallel.sequence: in training, activations between the tensor-parallel regions are split
  /// along the sequence over tp (parallel/tp/sequence_parallel.h); evaluation and generation
  /// keep them whole.
  bool sequence_parallel = false;
  /// Layout-invariant numerics (train.numerics): where this part holds both the embedding and a
  /// tied head, the head reads the weight through its own leaf (tied_head_alias()), so the two
  /// uses' gradients stay apart as they are when the stages sit on different chunks.
  bool separate_tied_head = false;

  /// Reads what every transformer family takes from the `model:` section (vocab, hidden, heads,
  /// layers, seq_len, tie_embeddings, and dropout, which is not a model key) into these options,
  /// recording the keys in `keys`; a preset's from_config reads its own terms after.
  void read_common(const ModelConfig& model, uint64_t seed, ModelKeys& keys);

  int64_t kv_head_count() const { return kv_heads == 0 ? heads : kv_heads; }
  int64_t mlp_width() const { return intermediate > 0 ? intermediate : 4 * hidden; }
};

class TransformerBlockImpl : public torch::nn::Module {
 public:
  /// `causal_bias`: the chunk's one [s, s] mask, shared by its blocks.
  TransformerBlockImpl(const TransformerOptions& options, Communicator& tp, TpDropout& dropout,
                       CausalBias& causal_bias);
  /// `cos`, `sin`: [s, head_dim] rotary tables of the whole sequence (undefined with learned
  /// positions).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos = {},
                        const torch::Tensor& sin = {});
  /// Parameters whose gradients each tp rank computes from its part of the sequence under
  /// sequence parallelism: the norms and the row-parallel biases.
  std::vector<torch::Tensor> sequence_partial_parameters();
  /// ZeRO-3: the gate the forward polls midway (ParameterGate::progress); null: none.
  void set_parameter_gate(ParameterGate* gate) { gate_ = gate; }
  /// Context parallelism: x holds `split`'s part of each sequence and attention reaches the
  /// other parts over `group` by `mode` (parallel/cp). A null group: whole sequences.
  void set_context_parallel(Communicator* group, ContextMode mode, const ContextSplit& split);

 private:
  torch::Tensor attention(const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin);
  /// Causal attention of q [b, heads, s, d] over k, v [b, heads, s, d] (the kv heads already
  /// repeated for their query groups): [b, heads, s, d].
  torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v);
  /// The same over a context-parallel group, from this rank's positions of q [b, heads, s, d]
  /// and of k, v [b, kv_heads, s, d].
  torch::Tensor context_attention(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v);
  torch::Tensor mlp(const torch::Tensor& x);
  /// Sequence parallelism is on for this forward (training, tp > 1).
  bool sequence_parallel() const;
  ParameterGate* gate_ = nullptr;    // ZeRO-3: polled midway, so the next unit's gather advances
  Communicator* context_ = nullptr;  // context parallelism's group (null: off)
  ContextMode context_mode_ = ContextMode::kRing;
  ContextSplit context_split_{2, 0, 1};
  TransformerOptions options_;
  TpDropout* dropout_;
  Communicator* tp_;
  int64_t local_heads_, local_kv_heads_, head_dim_;
  CausalBias* causal_bias_;
  torch::nn::AnyModule norm1_, norm2_;
  ColumnParallelLinear qkv_{nullptr}, q_{nullptr}, k_{nullptr}, v_{nullptr};
  ColumnParallelLinear mlp_gate_{nullptr}, mlp_in_{nullptr};
  RowParallelLinear out_{nullptr}, mlp_out_{nullptr};
};
TORCH_MODULE(TransformerBlock);

class TransformerImpl : public torch::nn::Module {
 public:
  TransformerImpl(const TransformerOptions& options, Communicator& tp);

  /// ids [b, s] -> hidden states [b, s, hidden] (this rank's [b, s/tp, hidden] under sequence
  /// parallelism; needs has_embedding).
  torch::Tensor embed(const torch::Tensor& ids);
  /// Runs this part's layers over hidden states [b, s, hidden].
  torch::Tensor run_layers(torch::Tensor h) { return run_layers(std::move(h), 0, blocks_.size()); }
  /// Runs this part's blocks [begin, end) (counted from its first layer) over `h`.
  torch::Tensor run_layers(torch::Tensor h, size_t begin, size_t end);
  /// How many blocks this part holds.
  size_t block_count() const { return blocks_.size(); }
  /// Final norm and head: [b, s, hidden] -> this rank's logits [b, s, padded_vocab / tp].
  torch::Tensor local_logits(const torch::Tensor& h);
  /// Mean cross-entropy over tokens != ignore_index, from hidden states (needs has_head).
  torch::Tensor loss_from_hidden(const torch::Tensor& h, const torch::Tensor& targets,
                                 int64_t ignore_index = -100);
  /// The whole model: ids and targets [b, s] -> mean loss (needs both ends).
  torch::Tensor loss(const torch::Tensor& ids, const torch::Tensor& targets);
  /// Final norm and head, gathered over tp: [b, s, hidden] -> logits [b, s, vocab] (needs
  /// has_head; generation).
  torch::Tensor logits_from_hidden(const torch::Tensor& h);
  /// Full logits [b, s, vocab], gathered over tp (generation, tests): not for training.
  torch::Tensor full_logits(const torch::Tensor& ids);
  /// The dropout streams of this part (checkpoints save and restore their positions).
  TpDropout& dropout() { return *dropout_; }
  const TransformerOptions& options() const { return options_; }
  /// Sequence parallelism is on for this forward (training, tp > 1).
  bool sequence_parallel() const;
  /// Parameters whose gradients each tp rank computes from its part of the sequence only, under
  /// sequence parallelism (norms, row-parallel biases): they must be summed over tp.
  std::vector<torch::Tensor> sequence_partial_parameters();
  /// With separate_tied_head on a part holding both ends: the leaf the head reads the tied
  /// weight through (the weight's own storage; not a parameter: no optimizer state, no
  /// checkpoint entry). Its gradient is the head's share, which the trainer sums with the
  /// embedding's as it sums a tied copy on another stage. Else undefined.
  torch::Tensor tied_head_alias();
  /// ZeRO-3: the units this part's parameters are gathered in (parallel/dp/parameter_gate.h):
  /// 0 the embeddings, 1 + i the part's block i, blocks + 1 the final norm and head (a tied copy
  /// of the embedding on a later stage is the head's). -1 for a name that is not a parameter.
  int parameter_unit(const std::string& name) const;
  /// The gate run around each unit's forward; null (the default): parameters are whole.
  void set_parameter_gate(ParameterGate* gate);
  /// Context parallelism (parallel.context > 1): each sequence of seq_len positions arrives as
  /// this rank's ContextSplit part (ids [b, seq_len / C]); positions are the part's global ones
  /// and attention runs over `group` by `mode`. Null (the default, and for generation, which
  /// runs whole sequences on every rank: the weights are the same over cp): off.
  void set_context_parallel(Communicator* group, ContextMode mode);
  /// The context-parallel group in use, or null.
  Communicator* context_parallel() const { return context_; }

 private:
  int head_unit() const { return static_cast<int>(blocks_.size()) + 1; }
  /// This rank's positions of a sequence under context parallelism, or [0, s).
  torch::Tensor positions(int64_t s, const torch::Device& device) const;
  Communicator* context_ = nullptr;
  TransformerOptions options_;
  Communicator* tp_;
  std::unique_ptr<TpDropout> dropout_;
  // One mask for every block of the chunk: a mask per block held layers x 4s^2 bytes (1 GiB per
  // rank at 8192 positions and 4 layers).
  std::unique_ptr<CausalBias> causal_bias_ = std::make_unique<CausalBias>();
  torch::Tensor cos_, sin_;  // rotary positions: [seq_len, head_dim], built once
  VocabParallelEmbedding token_embedding{nullptr};
  torch::nn::Embedding position_embedding{nullptr};
  std::vector<TransformerBlock> blocks_;
  torch::nn::AnyModule final_norm_;
  ColumnParallelLinear head{nullptr};
  torch::Tensor tied_head_alias_;
  ParameterGate* gate_ = nullptr;
};
TORCH_MODULE(Transformer);

}  // namespace triax
