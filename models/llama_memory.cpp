#include "models/llama_memory.h"

#include "models/llama.h"

namespace triax {

StageMemory llama_stage_memory(const Config& c, int tp, int64_t layers_here, bool first_stage,
                               bool last_stage) {
  const LlamaOptions o = LlamaOptions::from_config(c.model, 0);
  const double h = static_cast<double>(o.hidden);
  const double s = static_cast<double>(o.seq_len);
  const double b = static_cast<double>(c.train.micro_batch);
  const double a = static_cast<double>(o.heads);
  const double kv = static_cast<double>(o.kv_heads * (o.hidden / o.heads));
  const double inter = static_cast<double>(o.intermediate);
  const double t = tp;
  const double v_padded = static_cast<double>((o.vocab + tp - 1) / tp * tp);
  const double layers = static_cast<double>(layers_here);
  StageMemory m;
  double block = 2 * h * h / t + 2 * h * kv / t + 3 * h * inter / t + 2 * h;
  if (o.qkv_bias) block += (h + 2 * kv) / t;
  m.parameter_bytes = layers * block;
  if (first_stage || (last_stage && o.tie_embeddings)) m.parameter_bytes += v_padded / t * h;
  if (last_stage) m.parameter_bytes += h + (o.tie_embeddings ? 0 : v_padded / t * h);
  m.parameter_bytes *= 4;

  const double r = c.parallel.sequence && tp > 1 ? 1.0 / t : 1.0;
  const double sbh = s * b * h;
  const double s2 = 4 * a * s * s * b / t;
  const double full_block =
      24 * sbh * r + 24 * sbh / t + 8 * s * b * kv / t + 16 * s * b * inter / t + s2;
  const double outside = (first_stage ? 4 * sbh * r : 0) +
                         (last_stage ? 12 * sbh * r + 8 * s * b * v_padded / t : 8 * sbh * r);
  const Recompute mode = c.train.recompute;
  const double stored = mode == Recompute::kFull        ? (layers + 1) * 4 * sbh * r + full_block
                        : mode == Recompute::kSelective ? layers * (full_block - s2) + s2
                                                        : layers * full_block;
  m.activation_bytes = stored + outside;
  m.transient_bytes = mode == Recompute::kFull ? full_block : 0;
  // Split backward (models/gpt_memory.cpp says which gradients): two RMSNorm outputs, q, k, v,
  // gate and up (split by tp), o and down outputs (whole); the final norm and head.
  const double deferred_block = 4 * s * b * (2 * h * r + (h + 2 * kv + 2 * inter) / t + 2 * h);
  m.deferred_weight_bytes = (mode == Recompute::kFull ? 0 : layers * deferred_block) +
                            (last_stage ? 4 * s * b * (h * r + v_padded / t) : 0);
  return m;
}

}  // namespace triax
