#include "models/transformer.h"

#include <cmath>

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "core/torch_compat.h"
#include "models/activation_checkpoint.h"
#include "models/layer_norm.h"
#include "models/part_seed.h"
#include "models/rms_norm.h"
#include "models/rotary.h"
#include "parallel/cp/all_to_all_attention.h"
#include "parallel/cp/ring_attention.h"
#include "parallel/tp/sequence_parallel.h"
#include "parallel/tp/tp_mappings.h"

namespace triax {
namespace {

constexpr double kInitStd = 0.02;

torch::nn::AnyModule make_norm(const TransformerOptions& o) {
  if (o.norm == NormKind::kRmsNorm) return torch::nn::AnyModule(RmsNorm(o.hidden, o.norm_eps));
  return torch::nn::AnyModule(LayerNorm(o.hidden, o.norm_eps));
}

// The sequence-parallel rule, in one place: on for a forward in training with tp > 1.
bool splits_sequence(const TransformerOptions& o, bool training, const Communicator& tp) {
  return o.sequence_parallel && training && tp.size() > 1;
}

}  // namespace

void TransformerOptions::read_common(const ModelConfig& model, uint64_t seed_value,
                                     ModelKeys& keys) {
  vocab = keys.read("model.vocab", model.vocab);
  hidden = keys.read("model.hidden", model.hidden);
  heads = keys.read("model.heads", model.heads);
  layers = keys.read("model.layers", model.layers);
  seq_len = keys.read("model.seq_len", model.seq_len);
  tie_embeddings = keys.read("model.tie_embeddings", model.tie_embeddings);
  dropout = model.dropout;  // a training choice: no weight, no evaluation output
  seed = seed_value;
}

TransformerBlockImpl::TransformerBlockImpl(const TransformerOptions& options, Communicator& tp,
                                           TpDropout& dropout, CausalBias& causal_bias)
    : options_(options), dropout_(&dropout), tp_(&tp), causal_bias_(&causal_bias) {
  const int64_t kv_heads = options.kv_head_count();
  TRIAX_CHECK(options.heads % kv_heads == 0 && kv_heads % tp.size() == 0 &&
                  options.hidden % options.heads == 0,
              "heads ", options.heads, " / kv_heads ", kv_heads, " / hidden ", options.hidden,
              " do not fit tp ", tp.size());
  local_heads_ = options.heads / tp.size();
  local_kv_heads_ = kv_heads / tp.size();
  head_dim_ = options.hidden / options.heads;
  const int64_t h = options.hidden;
  const int64_t width = options.mlp_width();
  const BlockNames& n = options.names;
  // GPT-2: residual output projections start smaller, by 1/sqrt(2 * layers).
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(options.layers));
  const auto column = [&](int64_t out, bool bias) {
    return ColumnParallelLinear(ColumnParallelLinearOptions(h, out).bias(bias), tp);
  };
  const auto row = [&](int64_t in) {
    return RowParallelLinear(RowParallelLinearOptions(in, h)
                                 .bias(options.linear_bias)
                                 .input_is_parallel(true)
                                 .init_std(residual_std),
                             tp);
  };
  // Registration order is initialisation order (one seeded stream per layer): norm, attention's
  // projections, its output, norm, the MLP's.
  norm1_ = make_norm(options);
  register_module(n.norm1, norm1_.ptr());
  if (options.fused_qkv) {
    TRIAX_CHECK(kv_heads == options.heads, "a fused qkv projection needs kv_heads = heads");
    qkv_ = register_module(
        n.qkv, ColumnParallelLinear(
                   ColumnParallelLinearOptions(h, 3 * h).stride(3).bias(options.qkv_bias), tp));
  } else {
    q_ = register_module(n.q, column(h, options.qkv_bias));
    k_ = register_module(n.k, column(kv_heads * head_dim_, options.qkv_bias));
    v_ = register_module(n.v, column(kv_heads * head_dim_, options.qkv_bias));
  }
  out_ = register_module(n.out, row(h));
  norm2_ = make_norm(options);
  register_module(n.norm2, norm2_.ptr());
  if (options.mlp == MlpKind::kSwiGlu) {
    mlp_gate_ = register_module(n.mlp_gate, column(width, options.linear_bias));
  }
  mlp_in_ = register_module(n.mlp_in, column(width, options.linear_bias));
  mlp_out_ = register_module(n.mlp_out, row(width));
}

bool TransformerBlockImpl::sequence_parallel() const {
  return splits_sequence(options_, is_training(), *tp_);
}

torch::Tensor TransformerBlockImpl::attention(const torch::Tensor& x, const torch::Tensor& cos,
                                              const torch::Tensor& sin) {
  // With sequence parallelism x is this rank's part of the sequence: the projections gather it.
  const bool sp = sequence_parallel();
  const int64_t b = x.size(0);
  const int64_t s = sp ? x.size(1) * tp_->size() : x.size(1);
  const int64_t d = head_dim_;
  const int64_t n = b * local_heads_;
  torch::Tensor q, k, v;
  if (options_.fused_qkv) {
    // This rank's columns are [Q_r | K_r | V_r] (stride 3): its heads of each. One copy lays
    // them out head-major, so each of q, k, v is a contiguous [b * heads/tp, s, d] batch of
    // matrices and the batched matmuls below run on contiguous operands without further copies.
    const auto parts = (sp ? qkv_->forward_gathered(x) : qkv_(x))
                           .view({b, s, 3, local_heads_, d})
                           .permute({2, 0, 3, 1, 4})
                           .contiguous()
                           .view({3, n, s, d})
                           .unbind(0);
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    // Without sequence parallelism one f (copy to the tp region) serves all three projections,
    // so backward all-reduces the input gradient once; with it each gathers the sequence itself.
    const torch::Tensor shared = sp ? torch::Tensor() : copy_to_tp_region(x, *tp_);
    const auto project = [&](ColumnParallelLinear& layer, int64_t heads) {
      const torch::Tensor y =
          sp ? layer->forward_gathered(x) : mixed_linear(shared, layer->weight, layer->bias);
      return y.view({b, s, heads, d}).transpose(1, 2);  // [b, heads, s, d]
    };
    const bool rotary = options_.positions == PositionKind::kRotary;
    const torch::Tensor c = rotary ? cos.narrow(0, 0, s) : torch::Tensor();
    const torch::Tensor sn = rotary ? sin.narrow(0, 0, s) : torch::Tensor();
    const auto rope = [&](const torch::Tensor& t) { return rotary ? rotate(t, c, sn) : t; };
    const int64_t group = local_heads_ / local_kv_heads_;
    // Query head j reads kv head j / group: repeat each kv head `group` times (repeat_kv).
    const auto expand = [&](const torch::Tensor& t) {
      return group == 1 ? t : t.repeat_interleave(group, 1);
    };
    q = rope(project(q_, local_heads_));
    k = rope(project(k_, local_kv_heads_));
    v = project(v_, local_kv_heads_);
    if (context_ == nullptr) {
      q = q.reshape({n, s, d});
      k = expand(k).reshape({n, s, d});
      v = expand(v).reshape({n, s, d});
    }
  }
  // By value: selective recompute calls the core again in backward, after this frame is gone.
  const auto heads = [b, s, d](const torch::Tensor& t, int64_t count) {
    return t.view({b, count, s, d});
  };
  const auto core = [this, heads](const torch::Tensor& qq, const torch::Tensor& kk,
                                  const torch::Tensor& vv) {
    if (context_ != nullptr) return context_attention(qq, kk, vv);
    return causal_attention(heads(qq, local_heads_), heads(kk, local_heads_),
                            heads(vv, local_heads_));
  };
  if (context_ != nullptr && options_.fused_qkv) {  // [n, s, d] -> [b, heads, s, d]
    q = heads(q, local_heads_), k = heads(k, local_heads_), v = heads(v, local_heads_);
  }
  // Selective recompute keeps q, k, v and recomputes the [heads, s, s] tensors in backward.
  const torch::Tensor context = options_.recompute == Recompute::kSelective
                                    ? checkpointed(core, *dropout_, q, k, v)
                                    : core(q, k, v);
  const torch::Tensor y =
      context.transpose(1, 2).reshape({b, s, local_heads_ * d});  // context: [b, heads, s, d]
  return sp ? out_->forward_scattered(y) : out_(y);
}

torch::Tensor TransformerBlockImpl::causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                                     const torch::Tensor& v) {
  const int64_t b = q.size(0), heads = q.size(1), s = q.size(2), d = q.size(3);
  // On a GPU without attention dropout, LibTorch's fused kernel (flash attention): the same
  // function, without the [s, s] tensors in memory. The CPU keeps the explicit path below, whose
  // sums the layouts' bit-for-bit promises are about.
  if (q.is_cuda() && (options_.dropout == 0.0 || !is_training())) {
    // [b, heads, s, d], its memory often laid out [b, s, heads, d] (the kernels' own order).
    const torch::Tensor fused = fused_causal_attention(q, k, v);
    if (fused.defined()) return fused;
  }
  // scores = causal mask + q k^T / sqrt(d) in one batched matmul (as PyTorch's attention), then
  // softmax, dropout (split by head: each tp rank drops from its own stream) and the values.
  const auto batch = [&](const torch::Tensor& t) { return t.reshape({b * heads, s, d}); };
  const torch::Tensor scores =
      mixed_baddbmm(causal_bias_->of(s, q.device()), batch(q), batch(k).transpose(1, 2), 1.0,
                    1.0 / std::sqrt(static_cast<double>(d)));
  const torch::Tensor probs =
      dropout_->tp_local(torch::softmax(convert_precision(scores, torch::kFloat), -1),
                         options_.dropout, is_training());  // fp32 softmax, also under bf16
  return mixed_bmm(probs, batch(v)).view({b, heads, s, d});
}

torch::Tensor TransformerBlockImpl::context_attention(const torch::Tensor& q,
                                                      const torch::Tensor& k,
                                                      const torch::Tensor& v) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  if (context_mode_ == ContextMode::kRing) {
    // fp32 blocks merged by the online softmax; the result in q's dtype (bf16 under autocast).
    return ring_attention(q, k, v, context_split_, *context_, scale);
  }
  // Ulysses: this rank's heads over the whole sequence, attended as on one rank.
  return all_to_all_attention(
      q, k, v, context_split_, *context_,
      [this](const torch::Tensor& qq, const torch::Tensor& kk, const torch::Tensor& vv) {
        const int64_t group = qq.size(1) / kk.size(1);
        const auto expand = [group](const torch::Tensor& t) {
          return group == 1 ? t : t.repeat_interleave(group, 1);
        };
        return causal_attention(qq, expand(kk), expand(vv));
      });
}

void TransformerBlockImpl::set_context_parallel(Communicator* group, ContextMode mode,
                                                const ContextSplit& split) {
  context_ = group;
  context_mode_ = mode;
  context_split_ = split;
}

torch::Tensor TransformerBlockImpl::mlp(const torch::Tensor& x) {
  const bool sp = sequence_parallel();
  if (options_.mlp == MlpKind::kSwiGlu) {
    const torch::Tensor shared = sp ? torch::Tensor() : copy_to_tp_region(x, *tp_);
    const auto project = [&](ColumnParallelLinear& layer) {
      return sp ? layer->forward_gathered(x) : mixed_linear(shared, layer->weight, layer->bias);
    };
    const torch::Tensor y = torch::silu(project(mlp_gate_)) * project(mlp_in_);
    return sp ? mlp_out_->forward_scattered(y) : mlp_out_(y);
  }
  const char* approximate = options_.mlp == MlpKind::kGeluTanh ? "tanh" : "none";
  // Under bf16 the GELU of the bf16 input is computed in fp32 and rounded once, as oneDNN's bf16
  // GELU does: LibTorch's own bf16 kernel (what runs without AVX-512) rounds each of its steps
  // to bf16, and the numbers would depend on the CPU (Note [bf16 matmul arithmetic]).
  const auto gelu = [approximate](const torch::Tensor& h) {
    return convert_precision(torch::gelu(convert_precision(h, torch::kFloat), approximate),
                             h.scalar_type());
  };
  if (sp) return mlp_out_->forward_scattered(gelu(mlp_in_->forward_gathered(x)));
  return mlp_out_(gelu(mlp_in_(x)));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                            const torch::Tensor& sin) {
  const double p = options_.dropout;
  // With sequence parallelism x is this rank's part of the sequence: the norms, dropout and
  // residual adds run on it. Each tp rank then holds different rows, so residual dropout draws
  // from the rank's own stream.
  const bool sp = sequence_parallel();
  const auto drop = [&](const torch::Tensor& t) {
    return sp ? dropout_->tp_local(t, p, is_training()) : dropout_->shared(t, p, is_training());
  };
  const torch::Tensor h = mixed_add(x, drop(attention(norm1_.forward(x), cos, sin)));
  if (gate_) gate_->progress();
  return mixed_add(h, drop(mlp(norm2_.forward(h))));
}

std::vector<torch::Tensor> TransformerBlockImpl::sequence_partial_parameters() {
  std::vector<torch::Tensor> out = norm1_.ptr()->parameters();
  if (out_->bias.defined()) out.push_back(out_->bias);
  for (const torch::Tensor& p : norm2_.ptr()->parameters()) out.push_back(p);
  if (mlp_out_->bias.defined()) out.push_back(mlp_out_->bias);
  return out;
}

TransformerImpl::TransformerImpl(const TransformerOptions& options, Communicator& tp)
    : options_(options), tp_(&tp) {
  if (options_.last_layer < 0) options_.last_layer = options_.layers;
  TRIAX_CHECK(0 <= options_.first_layer && options_.first_layer <= options_.last_layer &&
                  options_.last_layer <= options_.layers,
              "layer range [", options_.first_layer, ", ", options_.last_layer, ") outside [0, ",
              options_.layers, "]");
  dropout_ = std::make_unique<TpDropout>(options_.seed, tp.rank());
  if (options_.positions == PositionKind::kRotary) {
    const RotaryTables tables = rotary_tables(options_, options_.hidden / options_.heads);
    cos_ = tables.cos;
    sin_ = tables.sin;
  }
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
    if (options_.separate_tied_head && options_.tie_embeddings && options_.has_embedding &&
        options_.has_head) {
      tied_head_alias_ = token_embedding->weight.detach().requires_grad_(true);
    }
    if (options_.has_embedding && options_.positions == PositionKind::kLearned) {
      position_embedding = register_module("position_embedding",
                                           torch::nn::Embedding(options_.seq_len, options_.hidden));
      torch::NoGradGuard no_grad;
      position_embedding->weight.normal_(0.0, kInitStd);
    }
  }
  for (int64_t layer = options_.first_layer; layer < options_.last_layer; ++layer) {
    seed_part(options_.seed, layer);
    blocks_.push_back(register_module(str("layer", layer),
                                      TransformerBlock(options_, tp, *dropout_, *causal_bias_)));
  }
  if (options_.has_head) {
    final_norm_ = make_norm(options_);
    register_module("final_norm", final_norm_.ptr());
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

torch::Tensor TransformerImpl::embed(const torch::Tensor& ids) {
  TRIAX_CHECK(options_.has_embedding, "this part of the model has no embedding");
  TRIAX_CHECK(ids.dim() == 2 && ids.size(1) <= options_.seq_len,
              "ids must be [batch, seq<=", options_.seq_len, "], got ", ids.sizes());
  if (gate_) gate_->enter(0, 1);  // then the first block (or, with none, nothing: unit 1 is empty)
  torch::Tensor h = token_embedding(ids);
  if (position_embedding) {
    // torch::nn::Embedding's lookup; a bf16 working weight's rows widened (exact): the residual
    // stream stays fp32.
    h = h + mixed_embedding(position_embedding->weight, positions(ids.size(1), ids.device()))
                .unsqueeze(0);
  }
  if (gate_) gate_->leave(0, h, -1);
  if (sequence_parallel()) {
    return dropout_->tp_local(scatter_sequence(h, *tp_), options_.dropout, is_training());
  }
  return dropout_->shared(h, options_.dropout, is_training());
}

torch::Tensor TransformerImpl::run_layers(torch::Tensor h, size_t begin, size_t end) {
  TRIAX_CHECK(begin <= end && end <= blocks_.size(), "blocks [", begin, ", ", end, ") of ",
              blocks_.size());
  // The rotary tables are no module state (nothing to save): they follow the activations' device.
  if (cos_.defined() && cos_.device() != h.device()) {
    cos_ = cos_.to(h.device());
    sin_ = sin_.to(h.device());
  }
  // Under context parallelism the blocks rotate this rank's positions: their rows of the tables.
  torch::Tensor cos = cos_, sin = sin_;
  if (context_ != nullptr && cos_.defined()) {
    const int64_t arrived = sequence_parallel() ? h.size(1) * tp_->size() : h.size(1);
    const torch::Tensor mine = positions(arrived, h.device());
    cos = cos_.index_select(0, mine);
    sin = sin_.index_select(0, mine);
  }
  const size_t recomputed = options_.recompute != Recompute::kFull ? 0
                            : options_.recompute_layers > 0
                                ? static_cast<size_t>(options_.recompute_layers)
                                : blocks_.size();
  for (size_t i = begin; i < end; ++i) {
    TransformerBlock& block = blocks_[i];
    // ZeRO-3: block i is unit 1 + i; the next unit is gathered beside it (forward: the next
    // block or the head; backward: the previous block or the embedding).
    const int unit = static_cast<int>(i) + 1;
    if (gate_) gate_->enter(unit, unit + 1);
    if (i < recomputed) {
      // Keeps only the block's input; the block runs again in backward.
      h = checkpointed([block](const torch::Tensor& x, const torch::Tensor& c,
                               const torch::Tensor& s) mutable { return block->forward(x, c, s); },
                       *dropout_, h, cos, sin);
    } else {
      h = block->forward(h, cos, sin);
    }
    if (gate_) gate_->leave(unit, h, unit - 1);
  }
  return h;
}

void TransformerImpl::set_context_parallel(Communicator* group, ContextMode mode) {
  context_ = group != nullptr && group->size() > 1 ? group : nullptr;
  const ContextSplit split =
      context_ != nullptr ? ContextSplit(options_.seq_len, context_->rank(), context_->size())
                          : ContextSplit(2, 0, 1);
  for (auto& block : blocks_) block->set_context_parallel(context_, mode, split);
}

torch::Tensor TransformerImpl::positions(int64_t s, const torch::Device& device) const {
  if (context_ == nullptr)
    return torch::arange(s, torch::TensorOptions(torch::kLong).device(device));
  const ContextSplit split(options_.seq_len, context_->rank(), context_->size());
  TRIAX_CHECK(s == split.local_length(), "context parallelism: ", s,
              " positions arrived, this rank holds ", split.local_length(), " of each ",
              options_.seq_len);
  return split.positions().to(device);
}

void TransformerImpl::set_parameter_gate(ParameterGate* gate) {
  gate_ = gate;
  for (auto& block : blocks_) block->set_parameter_gate(gate);
}

int TransformerImpl::parameter_unit(const std::string& name) const {
  const auto starts = [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; };
  if (starts("position_embedding.")) return 0;
  if (starts("token_embedding.")) return options_.has_embedding ? 0 : head_unit();
  if (starts("final_norm.") || starts("head.")) return head_unit();
  if (starts("layer")) {
    const size_t dot = name.find('.');
    const int64_t layer = std::stoll(name.substr(5, dot - 5));
    if (layer >= options_.first_layer && layer < options_.last_layer) {
      return static_cast<int>(layer - options_.first_layer) + 1;
    }
  }
  return -1;
}

torch::Tensor TransformerImpl::tied_head_alias() {
  if (!tied_head_alias_.defined()) return tied_head_alias_;
  // Re-aliased when the weight's storage moved (ZeRO-1 moves parameters into flat buckets).
  const torch::Tensor& weight = token_embedding->weight;
  if (tied_head_alias_.data_ptr() != weight.data_ptr()) tied_head_alias_.set_data(weight.detach());
  return tied_head_alias_;
}

torch::Tensor TransformerImpl::local_logits(const torch::Tensor& h) {
  TRIAX_CHECK(options_.has_head, "this part of the model has no head");
  // ZeRO-3: a tied head reads the embedding's unit too, where this part holds it.
  const bool tied_here = options_.tie_embeddings && options_.has_embedding;
  if (gate_) {
    gate_->enter(head_unit(), -1);
    if (tied_here) gate_->enter(0, -1);
  }
  torch::Tensor tied;
  if (options_.tie_embeddings) {
    const torch::Tensor alias = is_training() ? tied_head_alias() : torch::Tensor();
    tied = alias.defined() ? alias : token_embedding->weight;
  }
  torch::Tensor logits =
      output_logits(final_norm_.forward(h), tied, head, sequence_parallel(), *tp_);
  if (gate_) {
    gate_->leave(head_unit(), logits, head_unit() - 1);
    if (tied_here) gate_->leave(0, logits, -1);
  }
  return logits;
}

torch::Tensor TransformerImpl::loss_from_hidden(const torch::Tensor& h,
                                                const torch::Tensor& targets,
                                                int64_t ignore_index) {
  return mean_token_loss(local_logits(h), targets, *tp_, options_.vocab, ignore_index);
}

torch::Tensor TransformerImpl::loss(const torch::Tensor& ids, const torch::Tensor& targets) {
  return loss_from_hidden(run_layers(embed(ids)), targets);
}

torch::Tensor TransformerImpl::logits_from_hidden(const torch::Tensor& h) {
  return all_gather_last_dim(local_logits(h), *tp_).narrow(-1, 0, options_.vocab);
}

torch::Tensor TransformerImpl::full_logits(const torch::Tensor& ids) {
  return logits_from_hidden(run_layers(embed(ids)));
}

bool TransformerImpl::sequence_parallel() const {
  return splits_sequence(options_, is_training(), *tp_);
}

std::vector<torch::Tensor> TransformerImpl::sequence_partial_parameters() {
  std::vector<torch::Tensor> out;
  if (!options_.sequence_parallel || tp_->size() == 1) return out;
  for (auto& block : blocks_) {
    for (const torch::Tensor& p : block->sequence_partial_parameters()) out.push_back(p);
  }
  if (options_.has_head) {
    for (const torch::Tensor& p : final_norm_.ptr()->parameters()) out.push_back(p);
  }
  return out;
}

}  // namespace triax
