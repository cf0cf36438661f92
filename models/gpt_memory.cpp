#include "models/gpt_memory.h"

namespace triax {

StageMemory gpt_stage_memory(const Config& c, int tp, int64_t layers_here, bool first_stage,
                             bool last_stage) {
  const double h = static_cast<double>(c.model.hidden);
  const double s = static_cast<double>(c.model.seq_len);
  const double b = static_cast<double>(c.train.micro_batch);
  const double a = static_cast<double>(c.model.heads);
  const double t = tp;
  const double v_padded = static_cast<double>((c.model.vocab + tp - 1) / tp * tp);
  StageMemory th;
  // A block: qkv 3h^2/t + 3h/t, proj h^2/t + h, fc 4h^2/t + 4h/t, fc_out 4h^2/t + h, 2 norms 4h.
  const double block = 12 * h * h / t + 7 * h / t + 6 * h;
  th.parameter_bytes = layers_here * block;
  const bool has_embedding = first_stage || (last_stage && c.model.tie_embeddings);
  if (has_embedding) th.parameter_bytes += v_padded / t * h;
  if (first_stage) th.parameter_bytes += s * h;  // positions
  if (last_stage) th.parameter_bytes += 2 * h;   // final norm
  th.parameter_bytes *= 4;

  // Sequence parallelism splits what tensor parallelism leaves replicated by tp as well.
  const double r = c.parallel.sequence && tp > 1 ? 1.0 / t : 1.0;
  const double sbh = s * b * h;
  const double s2 = 4 * a * s * s * b / t;  // softmax output of one block
  const double full_block = sbh * (16 * r + 48 / t) + s2;
  // A stage before the last also holds its output and the gradient received for it.
  const double outside = (first_stage ? 4 * sbh * r : 0) +
                         (last_stage ? 8 * sbh * r + 8 * s * b * v_padded / t : 8 * sbh * r);
  const Recompute mode = c.train.recompute;
  const double stored = mode == Recompute::kFull ? (layers_here + 1) * 4 * sbh * r + full_block
                        : mode == Recompute::kSelective ? layers_here * (full_block - s2) + s2
                                                        : layers_here * full_block;
  // A recomputed block's backward under sequence parallelism also holds, for a moment, its
  // gathered input, the whole-sequence input gradient and that gradient's copy for the
  // reduce-scatter (3 x 4sbh); with everything else split, that transient is the peak's edge.
  const double gather_transient = mode == Recompute::kFull && r < 1 ? 12 * sbh : 0;
  th.activation_bytes = stored + outside + gather_transient;
  th.transient_bytes = mode == Recompute::kFull ? full_block + gather_transient : 0;
  // Split backward: per block the gradients of the two norms' outputs (split by sequence
  // parallelism), of q/k/v and the first MLP matmul (split by tp) and of the two row-parallel
  // outputs (whole); the final norm and the head on the last stage. A recomputed block is
  // opaque (its weights' gradients come in I), so it defers nothing.
  const double deferred_block = 4 * s * b * (2 * h * r + 7 * h / t + 2 * h);
  th.deferred_weight_bytes = (mode == Recompute::kFull ? 0 : layers_here * deferred_block) +
                             (last_stage ? 4 * s * b * (h * r + v_padded / t) : 0);
  return th;
}

}  // namespace triax
