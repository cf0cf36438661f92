#include "plan/predict.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "models/model_spec.h"
#include "schedules/schedule_check.h"

namespace triax {

std::string Prediction::bound() const {
  const double comm = dp_comm + tp_cross;
  if (compute >= bubble && compute >= comm) return "compute";
  return bubble >= comm ? "bubble" : "communication";
}

namespace {

struct ChunkCost {
  double forward = 0, backward = 0, weight = 0;  // weight: W's part of backward
};

}  // namespace

Prediction predict(const RunPlan& plan, const Candidate& c, const Profile& profile,
                   const PlanTopology& topology) {
  const Config& config = plan.config;
  const ModelSpec& spec = model_spec(config.model.arch);
  const Schedule& schedule = plan.schedule;
  const int p = schedule.stages;
  const int stages = schedule.total_stages();
  const ParallelLayout& layout = plan.layout;
  Prediction out;

  // ---- compute per chunk, from the profile --------------------------------------------------
  const ComputeTiming t =
      profile.timing(c.tp, plan.batch.micro_batch, config.train.recompute, plan.sequence_parallel);
  // Ranks on a node share its cores. A profile measured with k ranks busy per node predicts n
  // ranks per node at n/k its times while all are busy (a nominal one assumes a device per
  // rank). When a CPU node is oversubscribed, a pipeline rank that waits lends its core to the
  // others, so the pipeline is simulated with shared cores (simulate_shared).
  const int per_node = topology.per_node();
  const double load =
      profile.nominal ? 1.0 : static_cast<double>(per_node) / profile.ranks_per_node;
  const bool shared = !profile.nominal && per_node > profile.cores_per_node;
  // Seconds on a core of its own, for a profile measured with ranks_per_node ranks busy.
  const double exclusive =
      std::min(1.0, static_cast<double>(profile.cores_per_node) / profile.ranks_per_node);
  const double scale = shared ? exclusive : load;
  std::vector<ChunkCost> stage_cost(stages);
  for (int s = 0; s < stages; ++s) {
    const double layers =
        static_cast<double>(plan.stage_layers[s].second - plan.stage_layers[s].first);
    ChunkCost& k = stage_cost[s];
    k.forward = layers * t.layer.forward;
    k.backward = layers * t.layer.backward;
    if (s == 0) k.forward += t.first.forward, k.backward += t.first.backward;
    if (s == stages - 1) k.forward += t.last.forward, k.backward += t.last.backward;
    k.forward *= scale, k.backward *= scale;
    // W's share: the weight gradients of the layers' matmuls (the head's likewise).
    k.weight = k.backward * t.weight_share;
  }

  // ---- the pipeline, simulated ----------------------------------------------------------------
  SimulationCosts costs;
  costs.per_rank.resize(p);
  for (int r = 0; r < p; ++r) {
    ChunkCost mean;
    for (int chunk = 0; chunk < schedule.chunks; ++chunk) {
      const ChunkCost& k = stage_cost[schedule.stage_of(r, chunk)];
      mean.forward += k.forward / schedule.chunks;
      mean.backward += k.backward / schedule.chunks;
      mean.weight += k.weight / schedule.chunks;
    }
    costs.per_rank[r] = {mean.forward, mean.backward, mean.backward - mean.weight, mean.weight};
  }
  double activation_bytes = 4;
  for (int64_t d : plan.activation_shape) activation_bytes *= static_cast<double>(d);
  if (p > 1) {
    // Messages between neighbouring pipeline ranks of the first dp/tp coordinate; the worst link.
    const std::vector<int> pp_group = layout.group_of(Axis::kPp, 0);
    costs.transfer =
        profile.link(Collective::kSendRecv, 2, topology.link_of(pp_group)).time(activation_bytes);
  }
  // Every dp x tp replica of the pipeline runs the same schedule at once: k pipeline ranks
  // computing are k x replicas ranks on the node's cores, and the p - k waiting still take
  // wait_share of a core each (they poll for their message).
  const double replicas = std::max(1.0, static_cast<double>(per_node) / p);
  const double cores = profile.cores_per_node;
  const double waiting = profile.wait_share;
  const SimulationResult sim =
      shared ? simulate_shared(schedule, costs,
                               [&](int k) {
                                 return std::min(1.0, cores / ((k + waiting * (p - k)) * replicas));
                               })
             : simulate(schedule, costs);
  out.compute = *std::max_element(sim.busy.begin(), sim.busy.end());
  out.bubble = sim.makespan - out.compute;
  out.bubble_fraction = sim.bubble_fraction;

  // ---- memory per pipeline rank ----------------------------------------------------------------
  // Each rank's program in order: a forward adds what its micro-batch keeps, a backward (B, or
  // W after I) frees it, I adds the gradients W will need; a message sent stays alive until the
  // step ends (the executor completes sends then), and a sent activation is the stage's output,
  // so it stops counting among what the micro-batch keeps. The peak, and the transient of a
  // recomputed block's replay during a backward, are the rank's activations.
  double most_parameters = 0;
  out.memory.resize(p);
  for (int r = 0; r < p; ++r) {
    RankMemory& m = out.memory[r];
    std::vector<double> kept(schedule.chunks), deferred(schedule.chunks);
    double transient = 0;
    for (int chunk = 0; chunk < schedule.chunks; ++chunk) {
      const int s = schedule.stage_of(r, chunk);
      const StageMemory sm =
          spec.memory(config, c.tp, plan.stage_layers[s].second - plan.stage_layers[s].first,
                      s == 0, s == stages - 1);
      m.parameters += sm.parameter_bytes;
      kept[chunk] = sm.activation_bytes - sm.transient_bytes;
      deferred[chunk] = sm.deferred_weight_bytes;
      transient = std::max(transient, sm.transient_bytes);
      // The output a later stage on another rank receives is held by the send instead.
      if (s < stages - 1 && schedule.rank_of(s + 1) != r) kept[chunk] -= activation_bytes;
    }
    double now = 0, peak = 0;
    for (const Action& a : schedule.ranks[r]) {
      switch (a.kind) {
        case ActionKind::kForward:
          now += kept[a.chunk];
          break;
        case ActionKind::kBackward:
          peak = std::max(peak, now + transient);
          now -= kept[a.chunk];
          break;
        case ActionKind::kBackwardInput:
          peak = std::max(peak, now + transient);
          now += deferred[a.chunk];
          break;
        case ActionKind::kBackwardWeight:
          now -= kept[a.chunk] + deferred[a.chunk];
          break;
        case ActionKind::kSendActivation:
        case ActionKind::kSendGrad:
          if (a.peer != r) now += activation_bytes;
          break;
        default:
          break;
      }
      peak = std::max(peak, now);
    }
    const double dp = c.dp;
    m.gradients = m.parameters * (c.zero1 ? 1.0 + 1.0 / dp : 1.0);
    if (config.train.optimizer == OptimizerKind::kAdamW) {
      m.optimizer = 2 * m.parameters / (c.zero1 ? dp : 1.0);
    } else if (config.train.momentum != 0) {
      m.optimizer = m.parameters;
    }
    if (config.checkpoint.async && config.checkpoint.every > 0) {
      // The snapshot holds the stage's whole optimizer state, ZeRO-1 or not (it is gathered).
      m.checkpoint_snapshot = m.parameters + m.optimizer * (c.zero1 ? dp : 1.0);
    }
    m.in_flight = sim.peak_activations[r];
    m.activations = peak;
    out.peak_bytes = std::max(out.peak_bytes, m.total());
    most_parameters = std::max(most_parameters, m.parameters);
  }

  // ---- data-parallel sync, optimizer -----------------------------------------------------------
  const double grad_bytes =
      most_parameters * (config.ddp.reduce_dtype == Precision::kBf16 && c.dp > 1 ? 0.5 : 1.0);
  if (c.dp > 1) {
    const std::vector<int> dp_group = layout.group_of(Axis::kDp, 0);
    const LinkClass link = topology.link_of(dp_group);
    const int local = std::min(c.dp, topology.per_node());
    if (c.hierarchical == Hierarchical::kTrue && link == LinkClass::kNet && local > 1) {
      const int across = c.dp / local;
      out.dp_comm =
          profile.link(Collective::kReduceScatter, local, LinkClass::kNode).time(grad_bytes) +
          profile.link(Collective::kAllReduce, across, LinkClass::kNet).time(grad_bytes / local) +
          profile.link(Collective::kAllGather, local, LinkClass::kNode).time(grad_bytes);
    } else if (c.zero1) {
      out.dp_comm = profile.link(Collective::kReduceScatter, c.dp, link).time(grad_bytes);
    } else {
      out.dp_comm = profile.link(Collective::kAllReduce, c.dp, link).time(grad_bytes);
    }
    if (c.zero1) {  // parameters gathered back after the sharded update
      out.dp_comm += profile.link(Collective::kAllGather, c.dp, link).time(most_parameters);
    }
  }
  if (c.tp > 1) {
    // Per layer and micro-batch: 2 all-reduces of [b, s, h] forward and 2 backward (with
    // sequence parallelism as many all-gathers and reduce-scatters: the same bytes). Measured
    // layer times hold them on the calibrated link; a group across nodes adds the difference,
    // a nominal profile all of it.
    const LinkClass link = topology.link_of(layout.group_of(Axis::kTp, 0));
    const double bytes = activation_bytes * (plan.sequence_parallel ? c.tp : 1);
    const double per =
        profile.link(Collective::kAllReduce, c.tp, link).time(bytes) -
        (profile.nominal
             ? 0.0
             : profile.link(Collective::kAllReduce, c.tp, LinkClass::kNode).time(bytes));
    const double layers = static_cast<double>(config.model.layers) / p;
    out.tp_cross = 4 * std::max(0.0, per) * layers * static_cast<double>(c.microbatches);
  }
  out.optimizer = profile.optimizer_per_parameter * (most_parameters / 4) /
                  (c.zero1 ? static_cast<double>(c.dp) : 1.0) * load;
  out.overhead = profile.step_overhead;
  out.step_seconds = sim.makespan + out.tp_cross + out.dp_comm + out.optimizer + out.overhead;
  return out;
}

}  // namespace triax
