// defines: triax::GptOptions, triax::GptImpl, triax::Gpt, triax::check_gpt_layout
//
// A decoder-only, pre-LayerNorm transformer (GPT-2's shape) built from tensor-parallel layers:
//   h = dropout(tok_emb[ids] + pos_emb[0..s))                 tok_emb: VocabParallelEmbedding
//   per layer l: h = h + dropout(proj(attn(ln1(h))))          qkv: column (stride 3), proj: row
//                h = h + dropout(fc_out(gelu(fc(ln2(h)))))     fc: column (4h), fc_out: row
//   logits = ln_f(h) @ W_out^T, W_out = tok_emb (tied) or a column-parallel head
//   loss = vocab-parallel cross-entropy, mean over tokens that are not ignore_index
// Heads are split across tp ranks (each rank attends with heads/tp heads); no rank ever holds the
// full logits. GELU is the exact (erf) form, or GPT-2's tanh approximation (model.activation).
//
// A GptImpl can hold only a contiguous range of layers [first_layer, last_layer), plus the
// embedding (has_embedding) and the final norm and head (has_head), so pipeline stages build only
// their own part. Parameters are named by global layer index ("layer3.fc.weight"), and every
// parameter is initialised from a seed derived from (seed, its layer), so the numbers do not
// depend on which stage or tp layout built them.
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

/// Throws ConfigError (on every rank, before communication) when the GPT of `config` cannot be
/// laid out: heads not divisible by parallel.tensor, hidden not divisible by heads, ...
void check_gpt_layout(const Config& config);

/// "1, 2, 4, 8": the divisors of n, for messages that say what would be valid.
std::string valid_divisors(int64_t n);

struct GptOptions {
  int64_t vocab = 256;         ///< real vocabulary
  int64_t hidden = 128;        ///< features per token
  int64_t heads = 4;           ///< attention heads (all tp ranks together)
  int64_t layers = 4;          ///< layers of the whole model
  int64_t seq_len = 64;        ///< maximum sequence length (learned positions)
  double dropout = 0.0;        ///< dropout probability
  bool tie_embeddings = true;  ///< output projection = token embedding
  /// The MLP's GELU: exact (erf) or GPT-2's tanh approximation.
  Activation activation = Activation::kGelu;
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

  /// The whole model of the `model:` section, with `seed`; `keys` records each model.* key read
  /// (models/model_keys.h).
  static GptOptions from_config(const ModelConfig& model, uint64_t seed, ModelKeys* keys = nullptr);
};

class GptBlockImpl : public torch::nn::Module {
 public:
  GptBlockImpl(const GptOptions& options, Communicator& tp, TpDropout& dropout);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::Tensor attention(const torch::Tensor& x);
  torch::Tensor mlp(const torch::Tensor& x);
  /// Sequence parallelism is on for this forward (training, tp > 1).
  bool sequence_parallel() const;
  GptOptions options_;
  TpDropout* dropout_;
  Communicator* tp_;
  int64_t local_heads_;
  CausalBias causal_bias_;
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  ColumnParallelLinear qkv{nullptr}, fc{nullptr};
  RowParallelLinear proj{nullptr}, fc_out{nullptr};
};
TORCH_MODULE(GptBlock);

class GptImpl : public torch::nn::Module {
 public:
  GptImpl(const GptOptions& options, Communicator& tp);

  /// ids [b, s] -> hidden states [b, s, hidden] (needs has_embedding).
  torch::Tensor embed(const torch::Tensor& ids);
  /// Runs this part's layers over hidden states [b, s, hidden].
  torch::Tensor run_layers(torch::Tensor h);
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
  /// The dropout streams of this part (checkpoints save and restore their positions).
  TpDropout& dropout() { return *dropout_; }
  /// Full logits [b, s, vocab], gathered over tp (generation, tests): not for training.
  torch::Tensor full_logits(const torch::Tensor& ids);

  const GptOptions& options() const { return options_; }
  /// Sequence parallelism is on for this forward (training, tp > 1): hidden states between
  /// blocks are this rank's [b, s/tp, hidden].
  bool sequence_parallel() const;
  /// Parameters whose gradients each tp rank computes from its part of the sequence only under
  /// sequence parallelism (LayerNorms, row-parallel biases): they must be summed over tp.
  std::vector<torch::Tensor> sequence_partial_parameters();

 private:
  GptOptions options_;
  Communicator* tp_;
  std::unique_ptr<TpDropout> dropout_;
  VocabParallelEmbedding token_embedding{nullptr};
  torch::nn::Embedding position_embedding{nullptr};
  std::vector<GptBlock> blocks_;
  torch::nn::LayerNorm final_norm{nullptr};
  ColumnParallelLinear head{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace triax
