#include "models/transformer_memory.h"

#include <algorithm>

namespace triax {
namespace {

// Parameters (elements) of one block at tp `t`.
double block_parameters(const TransformerOptions& o, double t) {
  const double h = static_cast<double>(o.hidden);
  const double kv = static_cast<double>(o.kv_head_count() * (o.hidden / o.heads));
  const double inter = static_cast<double>(o.mlp_width());
  const double mlp_matrices = o.mlp == MlpKind::kSwiGlu ? 3 : 2;
  const double norm = o.norm == NormKind::kLayerNorm ? 2 * h : h;
  double block = (2 * h * h + 2 * h * kv + mlp_matrices * h * inter) / t + 2 * norm;
  if (o.qkv_bias) block += (h + 2 * kv) / t;
  if (o.linear_bias) block += h + inter / t + h;  // attention output; the MLP's two
  return block;
}

}  // namespace

StageMemory transformer_stage_memory(const TransformerOptions& o, const Config& c, int tp,
                                     int64_t layers_here, bool first_stage, bool last_stage) {
  const double h = static_cast<double>(o.hidden);
  // Context parallelism: a rank holds seq_len / context positions of each sequence.
  const double cp = static_cast<double>(std::max<int64_t>(1, c.parallel.context));
  const double whole = static_cast<double>(o.seq_len);
  const double s = whole / cp;
  const double b = static_cast<double>(c.train.micro_batch);
  const double a = static_cast<double>(o.heads);
  const double kv = static_cast<double>(o.kv_head_count() * (o.hidden / o.heads));
  const double inter = static_cast<double>(o.mlp_width());
  const double t = tp;
  const double v_padded = static_cast<double>((o.vocab + tp - 1) / tp * tp);
  const double layers = static_cast<double>(layers_here);
  const double norm_parameters = o.norm == NormKind::kLayerNorm ? 2 * h : h;
  StageMemory m;
  m.parameter_bytes = layers * block_parameters(o, t);
  if (first_stage || (last_stage && o.tie_embeddings)) m.parameter_bytes += v_padded / t * h;
  if (first_stage && o.positions == PositionKind::kLearned) m.parameter_bytes += whole * h;
  if (last_stage) m.parameter_bytes += norm_parameters + (o.tie_embeddings ? 0 : v_padded / t * h);
  m.parameter_bytes *= 4;

  // Sequence parallelism splits what tensor parallelism leaves replicated by tp as well.
  const double r = c.parallel.sequence && tp > 1 ? 1.0 / t : 1.0;
  const double sbh = s * b * h;
  const double sb = s * b;
  // The softmax output of one block. Ring attention keeps none (its backward recomputes each
  // block from the saved log-sum-exp): its fp32 output and log-sum-exp instead. All-to-all
  // attention keeps the softmax of its heads / context over the whole sequence; the head-split
  // q, k, v it keeps take the place of the sequence-split ones (freed after the exchange).
  const bool ring = cp > 1 && c.parallel.context_mode == ContextMode::kRing;
  const double s2 = cp == 1 ? 4 * a * s * s * b / t
                    : ring  ? 4 * s * b * (h + a) / t
                            : 4 * a * whole * whole * b / (t * cp);
  const double norm_kept = o.norm == NormKind::kLayerNorm ? 8 : 12;
  const double attention_kept = o.fused_qkv ? 16 * h / t : (24 * h + 8 * kv) / t;
  const double mlp_kept = (o.mlp == MlpKind::kSwiGlu ? 16 : 8) * inter / t;
  const double full_block = 2 * norm_kept * sbh * r + sb * (attention_kept + mlp_kept) + s2;
  // A stage before the last also holds its output and the gradient received for it.
  const double outside = (first_stage ? 4 * sbh * r : 0) +
                         (last_stage ? norm_kept * sbh * r + 8 * sb * v_padded / t : 8 * sbh * r);
  const Recompute mode = c.train.recompute;
  const double stored = mode == Recompute::kFull        ? (layers + 1) * 4 * sbh * r + full_block
                        : mode == Recompute::kSelective ? layers * (full_block - s2) + s2
                                                        : layers * full_block;
  // A recomputed block's backward under sequence parallelism also holds, for a moment, its
  // gathered input, the whole-sequence input gradient and that gradient's copy for the
  // reduce-scatter (3 x 4sbh): measured at the peak's edge with fused q|k|v (the GPT's rows of
  // tools/bench/memory.sh), not with grouped q, k, v, whose peak comes elsewhere (the Llama's row
  // measures 1.09 of the formula without the term, 0.93 with it).
  const double gather_transient = mode == Recompute::kFull && r < 1 && o.fused_qkv ? 12 * sbh : 0;
  // Softmax's backward holds the gradient of one block's scores beside the kept probabilities, s2
  // more for a moment (the ring has no s^2 tensors): measured at seq_len 2048 it is what the
  // formula missed, 1.01 of it with the term for cp 1 and all-to-all at cp 2 and 4 (it grows
  // as s^2, so at 256 positions it was within the noise).
  const double softmax_backward = ring ? 0 : s2;
  m.activation_bytes = stored + outside + gather_transient + softmax_backward;
  m.transient_bytes =
      (mode == Recompute::kFull ? full_block + gather_transient : 0) + softmax_backward;
  const double mlp_first = (o.mlp == MlpKind::kSwiGlu ? 2 : 1) * inter;  // gate and up, or fc
  const double deferred_block = 4 * sb * (2 * h * r + (h + 2 * kv + mlp_first) / t + 2 * h);
  m.deferred_weight_bytes = (mode == Recompute::kFull ? 0 : layers * deferred_block) +
                            (last_stage ? 4 * sb * (h * r + v_padded / t) : 0);
  return m;
}

}  // namespace triax
