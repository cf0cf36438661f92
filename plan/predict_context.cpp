#include "plan/predict_context.h"

#include <algorithm>

#include "models/model_spec.h"

namespace triax {

// Attention's share of a layer's FLOPs (scores and weighted sums, 12 h s per token, against the
// layer's matmuls), from the model's own count: taken apart by a layer more and half the length.
double attention_share(const ModelConfig& model) {
  double (*flops)(const ModelConfig&) = model_spec(model.arch).flops_per_unit;
  ModelConfig more = model, half = model;
  more.layers += 1;
  half.seq_len /= 2;
  const double whole = flops(model);
  const double layer = flops(more) - whole;
  const double attention = 2 * (whole - flops(half)) / static_cast<double>(model.layers);
  return layer > 0 ? std::clamp(attention / layer, 0.0, 1.0) : 0.0;
}

// Context parallelism's compute: a rank holds seq_len / cp positions. The matmuls (and the first
// and last stages' embedding, head and loss) scale by 1/cp; attention by the work a rank does.
// The ring (head-tail chunks r and 2cp-1-r of 2cp) computes its two query chunks against the
// visible key chunks of every block: 2cp + 1 chunk pairs of (s / 2cp)^2, where one process
// computes the whole s^2 (the CPU path masks, it does not skip); all-to-all attends over the
// whole sequence with 1/cp of the heads.
// Beyond FLOPs, the operations a layer adds per micro-batch, each `op_seconds` (the profile's),
// counted from parallel/cp/: the ring runs about 14 operations forward and 10 backward on every
// chunk pair it computes (2cp + 1), 4 and 10 per ring step (expanding, folding and passing
// blocks), 10 to set up each way, where one process's attention ran about 4 and 6; all-to-all
// about 4 per exchange (8 a layer). On short sequences these, not the FLOPs, decide.
void scale_for_context(ComputeTiming& t, const Candidate& c, const ModelConfig& model,
                       double op_seconds) {
  if (c.cp <= 1) return;
  const double cp = c.cp;
  const double f = attention_share(model);
  const bool ring = c.context_mode == ContextMode::kRing;
  const double attention = ring ? (2 * cp + 1) / (4 * cp * cp) : 1 / cp;
  const double layer = (1 - f) / cp + f * attention;
  t.layer.forward *= layer, t.layer.backward *= layer;
  const double forward_ops = ring ? (2 * cp + 1) * 14 + 4 * cp + 10 - 4 : 4 * 4;
  const double backward_ops = ring ? (2 * cp + 1) * 10 + 10 * cp + 10 - 6 : 4 * 4;
  // Recompute (selective: the attention core; full: the block) runs attention's forward again
  // in backward.
  const double reruns = c.recompute == Recompute::kNone ? 0 : 1;
  t.layer.forward += op_seconds * forward_ops;
  t.layer.backward += op_seconds * (backward_ops + reruns * forward_ops);
  for (PassTime* p : {&t.first, &t.last}) p->forward /= cp, p->backward /= cp;
}

// Context parallelism's exchanges per step on the busiest pipeline rank, as far as attention's
// compute does not hide them, for every layer of its stage(s) and every micro-batch. `layer` is
// the profile's layer timing (as one process runs it); elements travel in fp32 (the ring converts
// its blocks; the activations' element size is what the other formulas here assume too).
//   ring: forward cp - 1 kv blocks, each behind one step's attention (1/cp of the rank's);
//         backward the kv blocks again and their gradients (cp sends: the last one home after
//         the loop, exposed), two transfers behind each step's attention.
//   both: every exchange also waits for the slower neighbour, the profile's measured skew
//         (sync_seconds): the ring 3cp - 2 exchanges a layer, all-to-all 8; recompute runs the
//         forward's exchanges again.
//   all-to-all: q, k, v to heads and the output back forward, their gradients backward, not
//         overlapped; an all-to-all of a B-byte buffer sends (cp-1)/cp of it from every rank,
//         as a ring all-gather whose output is B does (its fit stands in).
double cp_exchange_seconds(const RunPlan& plan, const Candidate& c, const Profile& profile,
                           const PlanTopology& topology, const ComputeTiming& layer) {
  if (c.cp <= 1) return 0;
  const ModelConfig& m = plan.config.model;
  const double cp = c.cp;
  const double b = static_cast<double>(plan.batch.micro_batch);
  const double local_s = static_cast<double>(m.seq_len) / cp;
  const double head_dim = static_cast<double>(m.hidden / m.heads);
  const double kv_heads = static_cast<double>(m.kv_heads > 0 ? m.kv_heads : m.heads) / c.tp;
  const double heads = static_cast<double>(m.heads) / c.tp;
  const std::vector<int> group = plan.layout.group_of(Axis::kCp, 0);
  const LinkClass link = topology.link_of(group);
  // Recompute runs attention's forward, and its exchanges, again in backward.
  const double reruns = c.recompute == Recompute::kNone ? 0 : 1;
  double per_layer = 0;
  if (c.context_mode == ContextMode::kRing) {
    const double e = profile.message_element_bytes;
    const double block = 2 * b * kv_heads * local_s * head_dim * e;  // k and v
    const double x = profile.link(Collective::kSendRecv, 2, link).time(block);
    const double f = attention_share(m);
    const double share = f * (2 * cp + 1) / (4 * cp * cp);  // attention's part of the layer
    const double forward_step = share * layer.layer.forward / cp;
    const double backward_step = share * layer.layer.backward / cp;
    // Step 0 and the last overlap one transfer each, not two: counted as two (pessimistic by
    // one transfer's excess over its step at most).
    const double forward = (cp - 1) * (std::max(0.0, x - forward_step) + profile.sync_seconds);
    per_layer = (1 + reruns) * forward + (cp - 1) * std::max(0.0, 2 * x - backward_step) + x +
                (2 * cp - 1) * profile.sync_seconds;
  } else {
    const double e = profile.message_element_bytes;
    const double q = b * heads * local_s * head_dim * e, kv = b * kv_heads * local_s * head_dim * e;
    const LinkFit fit = profile.link(Collective::kAllGather, c.cp, link, topology.share(group));
    const double one_way = 2 * fit.time(q) + 2 * fit.time(kv) + 4 * profile.sync_seconds;
    per_layer = (2 + reruns) * one_way;
  }
  // The busiest pipeline rank: the most layers a rank holds over its chunks.
  double layers = 0;
  for (int r = 0; r < plan.schedule.stages; ++r) {
    double mine = 0;
    for (int chunk = 0; chunk < plan.schedule.chunks; ++chunk) {
      const auto& [first, last] = plan.stage_layers[plan.schedule.stage_of(r, chunk)];
      mine += static_cast<double>(last - first);
    }
    layers = std::max(layers, mine);
  }
  return per_layer * layers * static_cast<double>(c.microbatches);
}

}  // namespace triax
