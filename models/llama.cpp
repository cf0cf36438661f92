#include "models/llama.h"

#include <cmath>

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "models/activation_checkpoint.h"
#include "models/gpt.h"
#include "models/lm_head.h"
#include "models/part_seed.h"
#include "parallel/tp/sequence_parallel.h"
#include "parallel/tp/tp_mappings.h"

namespace triax {
namespace {

constexpr double kInitStd = 0.02;

// [-x2, x1] for x = [x1, x2] split in halves along the last dimension (Hugging Face's layout).
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

void check_llama_layout(const Config& config) {
  check_gpt_layout(config);  // heads | hidden, tp | heads, sequence parallelism, stages
  const ModelConfig& m = config.model;
  const int64_t kv = m.kv_heads == 0 ? m.heads : m.kv_heads;
  const int64_t tp = config.parallel.tensor;
  if (m.heads % kv != 0) {
    throw ConfigError(str("model.kv_heads: ", kv, " does not divide model.heads=", m.heads,
                          " (valid: ", valid_divisors(m.heads), ")"));
  }
  if (kv % tp != 0) {
    throw ConfigError(str("parallel.tensor: ", tp, " does not divide model.kv_heads=", kv,
                          ": each tensor-parallel rank must hold whole key/value heads (valid: ",
                          valid_divisors(kv), ")"));
  }
  if ((m.hidden / m.heads) % 2 != 0) {
    throw ConfigError(str("model.hidden / model.heads = ", m.hidden / m.heads,
                          " is odd; rotary embeddings rotate pairs (valid: an even head size)"));
  }
}

int64_t llama_intermediate_size(int64_t hidden, int64_t multiple_of) {
  const int64_t raw = 2 * (4 * hidden) / 3;
  return (raw + multiple_of - 1) / multiple_of * multiple_of;
}

LlamaOptions LlamaOptions::from_config(const ModelConfig& model, uint64_t seed, ModelKeys* keys) {
  ModelKeys unused;
  ModelKeys& k = keys != nullptr ? *keys : unused;
  LlamaOptions o;
  o.vocab = k.read("model.vocab", model.vocab);
  o.hidden = k.read("model.hidden", model.hidden);
  o.heads = k.read("model.heads", model.heads);
  // 0 means heads: the value the model uses is what a checkpoint is compared by.
  o.kv_heads = k.read("model.kv_heads", model.kv_heads == 0 ? model.heads : model.kv_heads);
  o.intermediate =
      k.read("model.intermediate_size", model.intermediate_size) > 0
          ? model.intermediate_size
          : llama_intermediate_size(model.hidden, k.read("model.multiple_of", model.multiple_of));
  o.layers = k.read("model.layers", model.layers);
  o.seq_len = k.read("model.seq_len", model.seq_len);
  o.norm_eps = k.read("model.norm_eps", model.norm_eps);
  o.rope_theta = k.read("model.rope_theta", model.rope_theta);
  o.rope_scaling_factor = k.read("model.rope_scaling_factor", model.rope_scaling_factor);
  if (o.rope_scaling_factor > 0) {  // the scaling's other terms count only when it is on
    o.rope_low_freq_factor = k.read("model.rope_low_freq_factor", model.rope_low_freq_factor);
    o.rope_high_freq_factor = k.read("model.rope_high_freq_factor", model.rope_high_freq_factor);
    o.rope_original_max_positions =
        k.read("model.rope_original_max_positions", model.rope_original_max_positions);
  }
  o.qkv_bias = k.read("model.qkv_bias", model.qkv_bias);
  o.tie_embeddings = k.read("model.tie_embeddings", model.tie_embeddings);
  o.dropout = model.dropout;  // a training choice: no weight, no evaluation output
  o.seed = seed;
  return o;
}

torch::Tensor rope_inverse_frequencies(const LlamaOptions& o, int64_t head_dim) {
  const torch::Tensor i = torch::arange(0, head_dim, 2, torch::kDouble);
  torch::Tensor freq = torch::pow(o.rope_theta, -i / static_cast<double>(head_dim));
  if (o.rope_scaling_factor > 0) {
    const double original = static_cast<double>(o.rope_original_max_positions);
    const double low_wavelen = original / o.rope_low_freq_factor;
    const double high_wavelen = original / o.rope_high_freq_factor;
    const torch::Tensor wavelen = 2 * M_PI / freq;
    const torch::Tensor smooth = (original / wavelen - o.rope_low_freq_factor) /
                                 (o.rope_high_freq_factor - o.rope_low_freq_factor);
    const torch::Tensor mixed = (1 - smooth) * freq / o.rope_scaling_factor + smooth * freq;
    freq = torch::where(wavelen > low_wavelen, freq / o.rope_scaling_factor,
                        torch::where(wavelen < high_wavelen, freq, mixed));
  }
  return freq.to(torch::kFloat);
}

RmsNormImpl::RmsNormImpl(int64_t features, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({features}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const torch::Tensor x32 = convert_precision(x, torch::kFloat);
  const torch::Tensor normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps_);
  return weight * convert_precision(normed, x.scalar_type());
}

LlamaBlockImpl::LlamaBlockImpl(const LlamaOptions& options, Communicator& tp, TpDropout& dropout)
    : options_(options), dropout_(&dropout), tp_(&tp) {
  TRIAX_CHECK(options.heads % options.kv_heads == 0 && options.kv_heads % tp.size() == 0 &&
                  options.hidden % options.heads == 0,
              "heads ", options.heads, " / kv_heads ", options.kv_heads, " do not fit tp ",
              tp.size());
  local_heads_ = options.heads / tp.size();
  local_kv_heads_ = options.kv_heads / tp.size();
  head_dim_ = options.hidden / options.heads;
  const int64_t h = options.hidden;
  const int64_t kv = options.kv_heads * head_dim_;
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(options.layers));
  input_norm = register_module("input_norm", RmsNorm(h, options.norm_eps));
  const auto column = [&](int64_t out, bool bias) {
    return ColumnParallelLinear(ColumnParallelLinearOptions(h, out).bias(bias), tp);
  };
  q_proj = register_module("q_proj", column(h, options.qkv_bias));
  k_proj = register_module("k_proj", column(kv, options.qkv_bias));
  v_proj = register_module("v_proj", column(kv, options.qkv_bias));
  o_proj = register_module(
      "o_proj",
      RowParallelLinear(
          RowParallelLinearOptions(h, h).bias(false).input_is_parallel(true).init_std(residual_std),
          tp));
  post_attention_norm = register_module("post_attention_norm", RmsNorm(h, options.norm_eps));
  gate_proj = register_module("gate_proj", column(options.intermediate, false));
  up_proj = register_module("up_proj", column(options.intermediate, false));
  down_proj = register_module("down_proj",
                              RowParallelLinear(RowParallelLinearOptions(options.intermediate, h)
                                                    .bias(false)
                                                    .input_is_parallel(true)
                                                    .init_std(residual_std),
                                                tp));
}

bool LlamaBlockImpl::sequence_parallel() const {
  return options_.sequence_parallel && is_training() && tp_->size() > 1;
}

torch::Tensor LlamaBlockImpl::attention(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  const bool sp = sequence_parallel();
  const int64_t b = x.size(0);
  const int64_t s = sp ? x.size(1) * tp_->size() : x.size(1);
  const int64_t d = head_dim_;
  // Without sequence parallelism one f (copy to the tp region) serves all three projections, so
  // backward all-reduces the input gradient once; with it each gathers the sequence itself.
  const torch::Tensor shared = sp ? torch::Tensor() : copy_to_tp_region(x, *tp_);
  const auto project = [&](ColumnParallelLinear& layer, int64_t heads) {
    const torch::Tensor y =
        sp ? layer->forward_gathered(x) : mixed_linear(shared, layer->weight, layer->bias);
    return y.view({b, s, heads, d}).transpose(1, 2);  // [b, heads, s, d]
  };
  const torch::Tensor c = cos.narrow(0, 0, s), sn = sin.narrow(0, 0, s);
  const auto rope = [&](const torch::Tensor& t) { return t * c + rotate_half(t) * sn; };
  const int64_t group = local_heads_ / local_kv_heads_;
  // Query head j reads kv head j / group: repeat each kv head `group` times (repeat_kv).
  const auto expand = [&](const torch::Tensor& t) {
    return group == 1 ? t : t.repeat_interleave(group, 1);
  };
  const torch::Tensor q = rope(project(q_proj, local_heads_)).reshape({b * local_heads_, s, d});
  const torch::Tensor k =
      expand(rope(project(k_proj, local_kv_heads_))).reshape({b * local_heads_, s, d});
  const torch::Tensor v =
      expand(project(v_proj, local_kv_heads_)).reshape({b * local_heads_, s, d});
  const auto core = [this, s, d](const torch::Tensor& qq, const torch::Tensor& kk,
                                 const torch::Tensor& vv) {
    const torch::Tensor scores = mixed_baddbmm(causal_bias_.of(s), qq, kk.transpose(1, 2), 1.0,
                                               1.0 / std::sqrt(static_cast<double>(d)));
    const torch::Tensor probs =
        dropout_->tp_local(torch::softmax(convert_precision(scores, torch::kFloat), -1),
                           options_.dropout, is_training());  // fp32 softmax, also under bf16
    return mixed_bmm(probs, vv);
  };
  // Selective recompute keeps q, k, v and recomputes the [heads, s, s] tensors in backward.
  const torch::Tensor context = options_.recompute == Recompute::kSelective
                                    ? checkpointed(core, *dropout_, q, k, v)
                                    : core(q, k, v);
  const torch::Tensor y =
      context.view({b, local_heads_, s, d}).transpose(1, 2).reshape({b, s, local_heads_ * d});
  return sp ? o_proj->forward_scattered(y) : o_proj(y);
}

torch::Tensor LlamaBlockImpl::mlp(const torch::Tensor& x) {
  const bool sp = sequence_parallel();
  const torch::Tensor shared = sp ? torch::Tensor() : copy_to_tp_region(x, *tp_);
  const auto project = [&](ColumnParallelLinear& layer) {
    return sp ? layer->forward_gathered(x) : mixed_linear(shared, layer->weight, layer->bias);
  };
  const torch::Tensor y = torch::silu(project(gate_proj)) * project(up_proj);
  return sp ? down_proj->forward_scattered(y) : down_proj(y);
}

torch::Tensor LlamaBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                      const torch::Tensor& sin) {
  const double p = options_.dropout;
  const bool sp = sequence_parallel();
  const auto drop = [&](const torch::Tensor& t) {
    return sp ? dropout_->tp_local(t, p, is_training()) : dropout_->shared(t, p, is_training());
  };
  const torch::Tensor h = mixed_add(x, drop(attention(input_norm(x), cos, sin)));
  return mixed_add(h, drop(mlp(post_attention_norm(h))));
}

std::vector<torch::Tensor> LlamaBlockImpl::sequence_partial_parameters() {
  return {input_norm->weight, post_attention_norm->weight};
}

LlamaImpl::LlamaImpl(const LlamaOptions& options, Communicator& tp) : options_(options), tp_(&tp) {
  if (options_.last_layer < 0) options_.last_layer = options_.layers;
  TRIAX_CHECK(0 <= options_.first_layer && options_.first_layer <= options_.last_layer &&
                  options_.last_layer <= options_.layers,
              "layer range [", options_.first_layer, ", ", options_.last_layer, ") outside [0, ",
              options_.layers, "]");
  dropout_ = std::make_unique<TpDropout>(options_.seed, tp.rank());
  const int64_t head_dim = options_.hidden / options_.heads;
  // The rotary tables: angle(position, i) = position * inv_freq[i], both halves alike.
  const torch::Tensor positions = torch::arange(options_.seq_len, torch::kFloat);
  const torch::Tensor angles =
      torch::outer(positions, rope_inverse_frequencies(options_, head_dim));
  const torch::Tensor both = torch::cat({angles, angles}, -1);
  cos_ = both.cos();
  sin_ = both.sin();
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
  }
  for (int64_t layer = options_.first_layer; layer < options_.last_layer; ++layer) {
    seed_part(options_.seed, layer);
    blocks_.push_back(register_module(str("layer", layer), LlamaBlock(options_, tp, *dropout_)));
  }
  if (options_.has_head) {
    final_norm = register_module("final_norm", RmsNorm(options_.hidden, options_.norm_eps));
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

bool LlamaImpl::sequence_parallel() const {
  return options_.sequence_parallel && is_training() && tp_->size() > 1;
}

torch::Tensor LlamaImpl::embed(const torch::Tensor& ids) {
  TRIAX_CHECK(options_.has_embedding, "this part of the model has no embedding");
  TRIAX_CHECK(ids.dim() == 2 && ids.size(1) <= options_.seq_len,
              "ids must be [batch, seq<=", options_.seq_len, "], got ", ids.sizes());
  const torch::Tensor h = token_embedding(ids);
  if (sequence_parallel()) {
    return dropout_->tp_local(scatter_sequence(h, *tp_), options_.dropout, is_training());
  }
  return dropout_->shared(h, options_.dropout, is_training());
}

torch::Tensor LlamaImpl::run_layers(torch::Tensor h) {
  const size_t recomputed = options_.recompute != Recompute::kFull ? 0
                            : options_.recompute_layers > 0
                                ? static_cast<size_t>(options_.recompute_layers)
                                : blocks_.size();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    LlamaBlock& block = blocks_[i];
    if (i < recomputed) {
      // Keeps only the block's input; the block runs again in backward.
      h = checkpointed([block](const torch::Tensor& x, const torch::Tensor& c,
                               const torch::Tensor& s) mutable { return block->forward(x, c, s); },
                       *dropout_, h, cos_, sin_);
    } else {
      h = block->forward(h, cos_, sin_);
    }
  }
  return h;
}

torch::Tensor LlamaImpl::local_logits(const torch::Tensor& h) {
  TRIAX_CHECK(options_.has_head, "this part of the model has no head");
  return output_logits(final_norm(h),
                       options_.tie_embeddings ? token_embedding->weight : torch::Tensor(), head,
                       sequence_parallel(), *tp_);
}

torch::Tensor LlamaImpl::loss_from_hidden(const torch::Tensor& h, const torch::Tensor& targets,
                                          int64_t ignore_index) {
  return mean_token_loss(local_logits(h), targets, *tp_, options_.vocab, ignore_index);
}

torch::Tensor LlamaImpl::loss(const torch::Tensor& ids, const torch::Tensor& targets) {
  return loss_from_hidden(run_layers(embed(ids)), targets);
}

torch::Tensor LlamaImpl::logits_from_hidden(const torch::Tensor& h) {
  return all_gather_last_dim(local_logits(h), *tp_).narrow(-1, 0, options_.vocab);
}

std::vector<torch::Tensor> LlamaImpl::sequence_partial_parameters() {
  std::vector<torch::Tensor> out;
  if (!options_.sequence_parallel || tp_->size() == 1) return out;
  for (auto& block : blocks_) {
    for (auto& p : block->sequence_partial_parameters()) out.push_back(p);
  }
  if (options_.has_head) out.push_back(final_norm->weight);
  return out;
}

}  // namespace triax
