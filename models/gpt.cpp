#include "models/gpt.h"

#include <cmath>

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "models/activation_checkpoint.h"
#include "models/lm_head.h"
#include "models/part_seed.h"
#include "parallel/tp/sequence_parallel.h"
#include "parallel/tp/tp_mappings.h"

namespace triax {
namespace {

constexpr double kInitStd = 0.02;

}  // namespace

std::string valid_divisors(int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return join(divisors, ", ");
}

void check_gpt_layout(const Config& config) {
  const ModelConfig& m = config.model;
  const int64_t tp = config.parallel.tensor;
  if (m.hidden % m.heads != 0) {
    throw ConfigError(str("model.heads: ", m.heads, " does not divide model.hidden=", m.hidden,
                          " (valid: ", valid_divisors(m.hidden), ")"));
  }
  if (m.heads % tp != 0) {
    throw ConfigError(str("parallel.tensor: ", tp, " does not divide model.heads=", m.heads,
                          " (valid: ", valid_divisors(m.heads), ")"));
  }
  if (config.parallel.sequence && tp == 1) {
    throw ConfigError(
        "parallel.sequence: true splits the sequence over tensor-parallel ranks, but "
        "parallel.tensor is 1 (set parallel.tensor > 1, or parallel.sequence: false)");
  }
  if (config.parallel.sequence && m.seq_len % tp != 0) {
    throw ConfigError(str("parallel.sequence: true needs model.seq_len=", m.seq_len,
                          " divisible by parallel.tensor=", tp,
                          " (valid tensor sizes: ", valid_divisors(m.seq_len), ")"));
  }
  if (config.parallel.pipeline > m.layers) {
    throw ConfigError(str("parallel.pipeline: ", config.parallel.pipeline,
                          " stages exceed model.layers=", m.layers, " (valid: 1 to ", m.layers,
                          ")"));
  }
}

GptOptions GptOptions::from_config(const ModelConfig& model, uint64_t seed, ModelKeys* keys) {
  ModelKeys unused;
  ModelKeys& k = keys != nullptr ? *keys : unused;
  GptOptions options;
  options.vocab = k.read("model.vocab", model.vocab);
  options.hidden = k.read("model.hidden", model.hidden);
  options.heads = k.read("model.heads", model.heads);
  options.layers = k.read("model.layers", model.layers);
  options.seq_len = k.read("model.seq_len", model.seq_len);
  options.tie_embeddings = k.read("model.tie_embeddings", model.tie_embeddings);
  options.activation = k.read("model.activation", model.activation);
  options.dropout = model.dropout;  // a training choice: no weight, no evaluation output
  options.seed = seed;
  return options;
}

GptBlockImpl::GptBlockImpl(const GptOptions& options, Communicator& tp, TpDropout& dropout)
    : options_(options), dropout_(&dropout), tp_(&tp) {
  TRIAX_CHECK(options.heads % tp.size() == 0 && options.hidden % options.heads == 0, "heads ",
              options.heads, " / hidden ", options.hidden, " do not fit tp ", tp.size());
  local_heads_ = options.heads / tp.size();
  const int64_t h = options.hidden;
  // GPT-2: residual output projections start smaller, by 1/sqrt(2 * layers).
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(options.layers));
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  qkv = register_module("qkv",
                        ColumnParallelLinear(ColumnParallelLinearOptions(h, 3 * h).stride(3), tp));
  proj = register_module(
      "proj",
      RowParallelLinear(
          RowParallelLinearOptions(h, h).input_is_parallel(true).init_std(residual_std), tp));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  fc = register_module("fc", ColumnParallelLinear(ColumnParallelLinearOptions(h, 4 * h), tp));
  fc_out = register_module(
      "fc_out",
      RowParallelLinear(
          RowParallelLinearOptions(4 * h, h).input_is_parallel(true).init_std(residual_std), tp));
}

torch::Tensor GptBlockImpl::attention(const torch::Tensor& x) {
  // With sequence parallelism x is this rank's part of the sequence: qkv gathers it.
  const bool sp = sequence_parallel();
  const int64_t b = x.size(0);
  const int64_t s = sp ? x.size(1) * tp_->size() : x.size(1);
  const int64_t d = options_.hidden / options_.heads;
  const int64_t n = b * local_heads_;
  // This rank's columns are [Q_r | K_r | V_r] (stride 3): its heads of each. One copy lays them
  // out head-major, so each of q, k, v is a contiguous [b * heads/tp, s, d] batch of matrices
  // and the batched matmuls below run on contiguous operands without further copies.
  const auto parts = (sp ? qkv->forward_gathered(x) : qkv(x))
                         .view({b, s, 3, local_heads_, d})
                         .permute({2, 0, 3, 1, 4})
                         .contiguous()
                         .view({3, n, s, d})
                         .unbind(0);
  // scores = causal mask + q k^T / sqrt(d) in one batched matmul (as PyTorch's attention), then
  // softmax, dropout (split by head: each tp rank drops from its own stream) and the values.
  const auto core = [this, s, d](const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v) {
    const torch::Tensor scores = mixed_baddbmm(causal_bias_.of(s), q, k.transpose(1, 2), 1.0,
                                               1.0 / std::sqrt(static_cast<double>(d)));
    const torch::Tensor probs =
        dropout_->tp_local(torch::softmax(convert_precision(scores, torch::kFloat), -1),
                           options_.dropout, is_training());  // fp32 softmax, also under bf16
    return mixed_bmm(probs, v);
  };
  // Selective recompute keeps q, k, v and recomputes the [heads, s, s] tensors in backward.
  const torch::Tensor context = options_.recompute == Recompute::kSelective
                                    ? checkpointed(core, *dropout_, parts[0], parts[1], parts[2])
                                    : core(parts[0], parts[1], parts[2]);
  const torch::Tensor y =
      context.view({b, local_heads_, s, d}).transpose(1, 2).reshape({b, s, local_heads_ * d});
  return sp ? proj->forward_scattered(y) : proj(y);
}

bool GptBlockImpl::sequence_parallel() const {
  return options_.sequence_parallel && is_training() && tp_->size() > 1;
}

torch::Tensor GptBlockImpl::mlp(const torch::Tensor& x) {
  const char* approximate = options_.activation == Activation::kGeluTanh ? "tanh" : "none";
  // Under bf16 the GELU of fc's bf16 output is computed in fp32 and rounded once, as oneDNN's
  // bf16 GELU does: LibTorch's own bf16 kernel (what runs without AVX-512) rounds each of its
  // steps to bf16, and the numbers would depend on the CPU (Note [bf16 matmul arithmetic]).
  const auto gelu = [approximate](const torch::Tensor& h) {
    return convert_precision(torch::gelu(convert_precision(h, torch::kFloat), approximate),
                             h.scalar_type());
  };
  if (sequence_parallel()) return fc_out->forward_scattered(gelu(fc->forward_gathered(x)));
  return fc_out(gelu(fc(x)));
}

torch::Tensor GptBlockImpl::forward(const torch::Tensor& x) {
  const double p = options_.dropout;
  // With sequence parallelism x is this rank's part of the sequence: the norms, dropout and
  // residual adds run on it, and the layers gather it (qkv, fc) / scatter their output (proj,
  // fc_out). Each tp rank then holds different rows, so residual dropout draws from the rank's
  // own stream.
  const bool sp = sequence_parallel();
  const auto drop = [&](const torch::Tensor& t) {
    return sp ? dropout_->tp_local(t, p, is_training()) : dropout_->shared(t, p, is_training());
  };
  torch::Tensor h = mixed_add(x, drop(attention(ln1(x))));
  return mixed_add(h, drop(mlp(ln2(h))));
}

GptImpl::GptImpl(const GptOptions& options, Communicator& tp) : options_(options), tp_(&tp) {
  if (options_.last_layer < 0) options_.last_layer = options_.layers;
  TRIAX_CHECK(0 <= options_.first_layer && options_.first_layer <= options_.last_layer &&
                  options_.last_layer <= options_.layers,
              "layer range [", options_.first_layer, ", ", options_.last_layer, ") outside [0, ",
              options_.layers, "]");
  dropout_ = std::make_unique<TpDropout>(options_.seed, tp.rank());
  const bool needs_embedding =
      options_.has_embedding || (options_.has_head && options_.tie_embeddings);
  if (needs_embedding) {
    seed_part(options_.seed, kEmbeddingPart);
    token_embedding = register_module(
        "token_embedding",
        VocabParallelEmbedding(VocabParallelEmbeddingOptions(options_.vocab, options_.hidden)
                                   .tied(options_.tie_embeddings)
                                   .tied_copy(!options_.has_embedding),
                               tp));
    if (options_.has_embedding) {
      position_embedding = register_module("position_embedding",
                                           torch::nn::Embedding(options_.seq_len, options_.hidden));
      torch::NoGradGuard no_grad;
      position_embedding->weight.normal_(0.0, kInitStd);
    }
  }
  for (int64_t layer = options_.first_layer; layer < options_.last_layer; ++layer) {
    seed_part(options_.seed, layer);
    blocks_.push_back(register_module(str("layer", layer), GptBlock(options_, tp, *dropout_)));
  }
  if (options_.has_head) {
    final_norm = register_module(
        "final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({options_.hidden})));
    if (!options_.tie_embeddings) {
      seed_part(options_.seed, options_.layers);
      head = register_module(
          "head", ColumnParallelLinear(ColumnParallelLinearOptions(options_.hidden, options_.vocab)
                                           .bias(false)
                                           .pad_to_tp(true),
                                       tp));
    }
  }
}

torch::Tensor GptImpl::embed(const torch::Tensor& ids) {
  TRIAX_CHECK(options_.has_embedding, "this part of the model has no embedding");
  TRIAX_CHECK(ids.dim() == 2 && ids.size(1) <= options_.seq_len,
              "ids must be [batch, seq<=", options_.seq_len, "], got ", ids.sizes());
  const torch::Tensor positions = torch::arange(ids.size(1), torch::kLong);
  const torch::Tensor h = token_embedding(ids) + position_embedding(positions).unsqueeze(0);
  if (sequence_parallel()) {
    return dropout_->tp_local(scatter_sequence(h, *tp_), options_.dropout, is_training());
  }
  return dropout_->shared(h, options_.dropout, is_training());
}

torch::Tensor GptImpl::run_layers(torch::Tensor h) {
  const size_t recomputed = options_.recompute != Recompute::kFull ? 0
                            : options_.recompute_layers > 0
                                ? static_cast<size_t>(options_.recompute_layers)
                                : blocks_.size();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    GptBlock& block = blocks_[i];
    if (i < recomputed) {
      // Keeps only the block's input; the block runs again in backward.
      h = checkpointed([block](const torch::Tensor& x, const torch::Tensor&,
                               const torch::Tensor&) mutable { return block->forward(x); },
                       *dropout_, h);
    } else {
      h = block(h);
    }
  }
  return h;
}

torch::Tensor GptImpl::local_logits(const torch::Tensor& h) {
  TRIAX_CHECK(options_.has_head, "this part of the model has no head");
  return output_logits(final_norm(h),
                       options_.tie_embeddings ? token_embedding->weight : torch::Tensor(), head,
                       sequence_parallel(), *tp_);
}

torch::Tensor GptImpl::loss_from_hidden(const torch::Tensor& h, const torch::Tensor& targets,
                                        int64_t ignore_index) {
  return mean_token_loss(local_logits(h), targets, *tp_, options_.vocab, ignore_index);
}

torch::Tensor GptImpl::loss(const torch::Tensor& ids, const torch::Tensor& targets) {
  return loss_from_hidden(run_layers(embed(ids)), targets);
}

torch::Tensor GptImpl::logits_from_hidden(const torch::Tensor& h) {
  return all_gather_last_dim(local_logits(h), *tp_).narrow(-1, 0, options_.vocab);
}

bool GptImpl::sequence_parallel() const {
  return options_.sequence_parallel && is_training() && tp_->size() > 1;
}

std::vector<torch::Tensor> GptImpl::sequence_partial_parameters() {
  std::vector<torch::Tensor> out;
  if (!options_.sequence_parallel || tp_->size() == 1) return out;
  for (const auto& item : named_parameters()) {
    const std::string& name = item.key();
    const auto ends_with = [&](const std::string& tail) {
      return name.size() >= tail.size() &&
             name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (name.find("ln1.") != std::string::npos || name.find("ln2.") != std::string::npos ||
        name.rfind("final_norm.", 0) == 0 || ends_with("proj.bias") || ends_with("fc_out.bias")) {
      out.push_back(item.value());
    }
  }
  return out;
}

torch::Tensor GptImpl::full_logits(const torch::Tensor& ids) {
  return logits_from_hidden(run_layers(embed(ids)));
}

}  // namespace triax
