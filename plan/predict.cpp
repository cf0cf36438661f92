#include "plan/predict.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "core/mixed_precision.h"
#include "models/model_spec.h"
#include "plan/predict_context.h"
#include "schedules/action_memory.h"
#include "schedules/schedule_check.h"

namespace triax {

std::string Prediction::bound() const {
  const double comm = communication();
  if (compute >= bubble && compute >= comm) return "compute";
  return bubble >= comm ? "bubble" : "communication";
}

namespace {

struct ChunkCost {
  double forward = 0, backward = 0, weight = 0;  // weight: W's part of backward
};

// How the profile's times translate to the plan's ranks per node. Ranks on a node share its
// cores. A profile measured with k ranks busy per node predicts n ranks per node at n/k its times
// while all are busy (a nominal one assumes a device per rank). When a CPU node is
// oversubscribed, a pipeline rank that waits lends its core to the others, so the pipeline is
// simulated with shared cores (simulate_shared).
struct CoreShare {
  double load = 1;      // n/k
  bool shared = false;  // oversubscribed: simulate_shared
  double scale = 1;     // what compute times are multiplied by
};

CoreShare core_share(const Profile& profile, const PlanTopology& topology) {
  CoreShare share;
  const int per_node = topology.per_node();
  share.load = profile.nominal ? 1.0 : static_cast<double>(per_node) / profile.ranks_per_node;
  share.shared = !profile.nominal && per_node > profile.cores_per_node;
  // Seconds on a core of its own, for a profile measured with ranks_per_node ranks busy.
  const double exclusive =
      std::min(1.0, static_cast<double>(profile.cores_per_node) / profile.ranks_per_node);
  share.scale = share.shared ? exclusive : share.load;
  return share;
}

// Every stage's forward, backward and W seconds: its layers' and, on the first and last, the
// embedding's and the head's, from the profile's timing.
std::vector<ChunkCost> stage_costs(const RunPlan& plan, const ComputeTiming& t, double scale) {
  const int stages = plan.schedule.total_stages();
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
  return stage_cost;
}

// The schedule simulated with those costs: shared cores where the node is oversubscribed.
SimulationResult simulate_with(const Schedule& schedule, const SimulationCosts& costs,
                               const Profile& profile, const PlanTopology& topology,
                               const CoreShare& share) {
  const int p = schedule.stages;
  if (!share.shared) return simulate(schedule, costs);
  // Every dp x tp replica of the pipeline runs the same schedule at once: k pipeline ranks
  // computing are k x replicas ranks on the node's cores, and the p - k waiting still take
  // wait_share of a core each (they poll for their message).
  const double replicas = std::max(1.0, static_cast<double>(topology.per_node()) / p);
  const double cores = profile.cores_per_node;
  const double waiting = profile.wait_share;
  return simulate_shared(schedule, costs, [&](int k) {
    return std::min(1.0, cores / ((k + waiting * (p - k)) * replicas));
  });
}

// The schedule run with each rank's mean chunk costs and the messages' time on the pipeline's
// link.
SimulationResult simulate_pipeline(const RunPlan& plan, const std::vector<ChunkCost>& stage_cost,
                                   double activation_bytes, const Profile& profile,
                                   const PlanTopology& topology, const CoreShare& share,
                                   PredictCache* cache) {
  const Schedule& schedule = plan.schedule;
  const int p = schedule.stages;
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
  if (p > 1) {
    // Messages between neighbouring pipeline ranks of the first dp/tp coordinate; the worst link.
    const std::vector<int> pp_group = plan.layout.group_of(Axis::kPp, 0);
    costs.transfer =
        profile.link(Collective::kSendRecv, 2, topology.link_of(pp_group)).time(activation_bytes);
  }
  std::vector<double> inputs = {static_cast<double>(p), static_cast<double>(schedule.microbatches),
                                static_cast<double>(schedule.chunks), share.shared ? 1.0 : 0.0,
                                costs.transfer};
  for (const auto& k : costs.per_rank) inputs.insert(inputs.end(), k.begin(), k.end());
  const std::pair<std::string, std::vector<double>> key{schedule.name, std::move(inputs)};
  if (cache) {
    if (auto it = cache->simulations.find(key); it != cache->simulations.end()) return it->second;
  }
  SimulationResult result = simulate_with(schedule, costs, profile, topology, share);
  if (cache) {
    result.timings.clear();  // not read by predict; the largest part
    cache->simulations.emplace(key, result);
  }
  return result;
}

// What one chunk of a rank holds, by the model's formulas (bytes).
struct ChunkMemory {
  double kept = 0;      // from its forward to its backward, per micro-batch
  double deferred = 0;  // from I to W, per micro-batch
};

// Rank r's peak activation bytes, following its program (schedules/action_memory.h): a forward
// adds what its micro-batch keeps, a backward (B, or W after I) frees it, I adds the gradients W
// will need; a message sent stays alive until the step ends; a recomputed block's replay adds
// `transient` during a backward.
double activation_peak(const Schedule& schedule, int r, const std::vector<ChunkMemory>& chunks,
                       double transient, double activation_bytes) {
  double now = 0, peak = 0;
  for (const Action& a : schedule.ranks[r]) {
    const ActionMemory effect = action_memory(a.kind);
    if (effect.backward) peak = std::max(peak, now + transient);
    if (effect.micro_batches != 0 || effect.deferred != 0) {
      const ChunkMemory& k = chunks[a.chunk];
      now += effect.micro_batches * k.kept + effect.deferred * k.deferred;
    }
    if (effect.sends && a.peer != r) now += activation_bytes;
    peak = std::max(peak, now);
  }
  return peak;
}

using PeakIterator = decltype(PredictCache::activation_peaks)::iterator;

// Pipeline rank r's bytes: the model's parameters for its chunks, their gradients and optimizer
// state, the asynchronous checkpoint's copy, and the peak of its activations.
RankMemory rank_memory(const RunPlan& plan, const Candidate& c, int r, double activation_bytes,
                       PredictCache* cache) {
  const Config& config = plan.config;
  const ModelSpec& spec = model_spec(config.model.arch);
  const Schedule& schedule = plan.schedule;
  const int stages = schedule.total_stages();
  RankMemory m;
  std::vector<ChunkMemory> chunks(schedule.chunks);
  double transient = 0;
  // ZeRO-3: the most of one chunk whole at once — the unit computing and the one prefetched (two
  // blocks) and the embedding where the chunk holds it (a tied head gathers it).
  const double embedding = 4.0 * static_cast<double>(config.model.vocab) *
                           static_cast<double>(config.model.hidden) / c.tp;
  double two_units = 0;
  for (int chunk = 0; chunk < schedule.chunks; ++chunk) {
    const int s = schedule.stage_of(r, chunk);
    const StageMemory sm =
        spec.memory(config, c.tp, plan.stage_layers[s].second - plan.stage_layers[s].first, s == 0,
                    s == stages - 1);
    m.parameters += sm.parameter_bytes;
    {
      const int64_t layers = plan.stage_layers[s].second - plan.stage_layers[s].first;
      const bool ends = s == 0 || (s == stages - 1 && config.model.tie_embeddings);
      const double own = sm.parameter_bytes - (ends ? embedding : 0);
      const double block = layers > 0 ? own / static_cast<double>(layers) : own;
      two_units =
          std::max(two_units, std::min(sm.parameter_bytes, 2 * block + (ends ? embedding : 0)));
    }
    chunks[chunk] = {sm.activation_bytes - sm.transient_bytes, sm.deferred_weight_bytes};
    transient = std::max(transient, sm.transient_bytes);
    // A sent activation is the stage's output, held by the send instead (a later stage on
    // another rank receives it).
    if (s < stages - 1 && schedule.rank_of(s + 1) != r) chunks[chunk].kept -= activation_bytes;
  }
  std::vector<double> inputs = {static_cast<double>(schedule.stages),
                                static_cast<double>(schedule.microbatches),
                                static_cast<double>(schedule.chunks),
                                static_cast<double>(r),
                                transient,
                                activation_bytes};
  for (const ChunkMemory& k : chunks) inputs.insert(inputs.end(), {k.kept, k.deferred});
  const std::pair<std::string, std::vector<double>> key{schedule.name, std::move(inputs)};
  if (auto found = cache ? cache->activation_peaks.find(key) : PeakIterator{};
      cache && found != cache->activation_peaks.end()) {
    m.activations = found->second;
  } else {
    m.activations = activation_peak(schedule, r, chunks, transient, activation_bytes);
    if (cache) cache->activation_peaks.emplace(key, m.activations);
  }
  // ZeRO-1 splits the state (and keeps a gradient slice) over its shard group: all of dp, or
  // optimizer.shard_group ranks under hybrid sharding. ZeRO-2 keeps only the slice, and in
  // backward the gradients of buckets not yet complete (about two of ddp.bucket_mb, at most the
  // stage's gradient) and two buckets' buffers being sent.
  const double shards = c.state_shards();
  double sliced_parameters = -1;  // ZeRO-3: what a rank holds of the parameters at the peak
  if (c.shard == ShardLevel::kGradients || c.shard == ShardLevel::kParameters) {
    // Per chunk: about 2 buckets filling and 2 being sent, a bucket being ddp.bucket_mb or the
    // largest tensor alone (the token embedding); a W pass (ZB-H1, ZB-V) adds a chunk's gradient.
    const double largest = 4.0 * static_cast<double>(config.model.vocab) *
                           static_cast<double>(config.model.hidden) / c.tp;
    const double bucket = std::max(config.ddp.bucket_mb * 1024 * 1024, largest);
    const bool split = c.schedule == ScheduleKind::kZbh1 || c.schedule == ScheduleKind::kZbv;
    // Not all of it at the activations' peak (a forward's end): then a rank holds the slices, the
    // flights a previous micro-batch's backward left in the air (no hook lands them during a
    // forward; none with one micro-batch a step) and what W passes wait for; the buckets filling
    // come during backward, as activations are freed, and count where they exceed them (at
    // backward's end the activations are about gone). Measured (plan_accuracy.sh, dp 4, one
    // micro-batch) the sum of both peaks was 27-30% over the rank's peak.
    const double slices = m.parameters / shards;
    const double deferred = split ? m.parameters : 0;
    const double at_peak =
        slices + (c.microbatches > 1 ? std::min(m.parameters, 2 * bucket) : 0) + deferred;
    const double late = slices + std::min(m.parameters, 2 * bucket) +
                        std::min(m.parameters, c.chunks * 2 * bucket) + deferred;
    m.gradients = std::max(at_peak, late - m.activations);
  } else {
    m.gradients = m.parameters * (c.sharded() ? 1.0 + 1.0 / shards : 1.0);
  }
  if (c.shard == ShardLevel::kParameters) {
    // ZeRO-3: this rank's slices and the units whole at once. Two units (above) when each is
    // freed after its forward and after its backward (a pipeline's micro-batches interleave,
    // but each gathers a unit only while it computes with it); the whole stage when a switch
    // keeps them, or under a split backward (a unit stays whole from a micro-batch's I pass to
    // its W pass, and some W is always pending). Set below:
    // the state and the snapshot are sized by the whole stage.
    const bool split = c.schedule == ScheduleKind::kZbh1 || c.schedule == ScheduleKind::kZbv;
    const bool keeps = !config.ddp.reshard_after_forward || !config.ddp.reshard_after_backward;
    const double gathered = keeps || split ? m.parameters : two_units;
    sliced_parameters = m.parameters / shards + gathered;
  }
  // bf16 working weights (train.param_dtype, sharded levels only): half the bytes of the
  // weights, whole or sliced and gathered; their fp32 master lives beside the moments.
  const MixedPrecision precision(config);
  const double working = precision.param_bytes() / 4.0;
  const bool master = precision.param_dtype() != torch::kFloat;
  if (config.train.optimizer == OptimizerKind::kAdamW) {
    m.optimizer = (master ? 3 : 2) * m.parameters / shards;
  } else if (config.train.momentum != 0) {
    m.optimizer = m.parameters;
  }
  if (config.checkpoint.async && config.checkpoint.every > 0) {
    // The snapshot holds the stage's whole optimizer state, ZeRO-1 or not (it is gathered; a
    // master is saved in the parameters' place).
    m.checkpoint_snapshot = (master ? 0 : m.parameters) + m.optimizer * shards;
  }
  m.fp32_parameters = m.parameters;
  if (sliced_parameters >= 0) m.parameters = sliced_parameters;
  m.parameters *= working;
  return m;
}

// The data-parallel gradient sync of the largest stage's gradients: its reductions, and the
// parameters' all-gathers of the sharded levels.
struct DpSync {
  double reduce = 0;
  double gather = 0;
};
DpSync dp_sync_seconds(const RunPlan& plan, const Candidate& c, const Profile& profile,
                       const PlanTopology& topology, double most_parameters) {
  if (c.replicas() <= 1) return {};
  const double grad_bytes = most_parameters / 4 * MixedPrecision(plan.config).wire_bytes();
  // What an all-gather of the parameters moves: the working weights (bf16 under param_dtype).
  const double weight_bytes = most_parameters / 4 * MixedPrecision(plan.config).param_bytes();
  // The ranks holding the same weights: the dp group, or dp x cp under context parallelism.
  std::vector<int> dp_group;
  for (int r : plan.layout.group_of(Axis::kCp, 0)) {
    for (int d : plan.layout.group_of(Axis::kDp, r)) dp_group.push_back(d);
  }
  std::sort(dp_group.begin(), dp_group.end());
  const int replicas = c.replicas();
  const LinkClass link = topology.link_of(dp_group);
  const int share = topology.share(dp_group);
  const int local = std::min(replicas, topology.per_node());
  // ZeRO-2 and -3 reduce-scatter every micro-batch's gradients (ZeRO-1 the step's sum once).
  const bool per_microbatch =
      c.shard == ShardLevel::kGradients || c.shard == ShardLevel::kParameters;
  const double times = per_microbatch ? static_cast<double>(c.microbatches) : 1;
  // ZeRO-3 gathers the parameters for every micro-batch's forward and again for its backward
  // (fewer with the reshard switches off); the others once, after the update.
  double gathers = 1;
  if (c.shard == ShardLevel::kParameters) {
    const bool forward = plan.config.ddp.reshard_after_forward;
    const bool backward = plan.config.ddp.reshard_after_backward;
    gathers = forward    ? 2.0 * static_cast<double>(c.microbatches)
              : backward ? static_cast<double>(c.microbatches)
                         : 1.0;
  }
  if (c.sharded() && c.shard_group > 0 && c.shard_group < c.dp) {
    // Hybrid sharding: reduce-scatter inside a group of S consecutive dp ranks (ZeRO-2: every
    // micro-batch), the slice (1/S) all-reduced across the dp / S groups once per step, the
    // parameters all-gathered inside the group.
    const int s = c.shard_group;
    const LinkClass inside =
        topology.link_of(std::vector<int>(dp_group.begin(), dp_group.begin() + s));
    std::vector<int> across;
    for (size_t k = 0; k < dp_group.size(); k += static_cast<size_t>(s)) {
      across.push_back(dp_group[k]);
    }
    const std::vector<int> group(dp_group.begin(), dp_group.begin() + s);
    const int share = topology.share(group);
    return {times * profile.link(Collective::kReduceScatter, s, inside, share).time(grad_bytes) +
                profile
                    .link(Collective::kAllReduce, c.dp / s, topology.link_of(across),
                          topology.share(across))
                    .time(grad_bytes / s),
            gathers * profile.link(Collective::kAllGather, s, inside, share).time(weight_bytes)};
  }
  DpSync out;
  double& seconds = out.reduce;
  if (c.sharded()) {
    // The node-aware communicator forwards a reduce-scatter to the flat group: no hierarchy.
    seconds =
        times * profile.link(Collective::kReduceScatter, replicas, link, share).time(grad_bytes);
  } else if (c.hierarchical == Hierarchical::kTrue && link == LinkClass::kNet && local > 1) {
    const int across = replicas / local;
    seconds =
        profile.link(Collective::kReduceScatter, local, LinkClass::kNode).time(grad_bytes) +
        profile.link(Collective::kAllReduce, across, LinkClass::kNet).time(grad_bytes / local) +
        profile.link(Collective::kAllGather, local, LinkClass::kNode).time(grad_bytes);
  } else {
    seconds = profile.link(Collective::kAllReduce, replicas, link, share).time(grad_bytes);
  }
  if (c.sharded()) {  // parameters gathered back after the sharded update (ZeRO-3: per use)
    out.gather =
        gathers * profile.link(Collective::kAllGather, replicas, link, share).time(weight_bytes);
  }
  return out;
}

// Per layer and micro-batch: 2 all-reduces of [b, s, h] forward and 2 backward (with sequence
// parallelism as many all-gathers and reduce-scatters: the same bytes). Measured layer times
// hold them on the calibrated link; a group across nodes adds the difference, a nominal profile
// all of it.
double tp_cross_seconds(const RunPlan& plan, const Candidate& c, const Profile& profile,
                        const PlanTopology& topology, double activation_bytes) {
  if (c.tp <= 1) return 0;
  const std::vector<int> group = plan.layout.group_of(Axis::kTp, 0);
  const LinkClass link = topology.link_of(group);
  const double bytes = activation_bytes * (plan.sequence_parallel ? c.tp : 1);
  const double per =
      profile.link(Collective::kAllReduce, c.tp, link, topology.share(group)).time(bytes) -
      (profile.nominal ? 0.0
                       : profile.link(Collective::kAllReduce, c.tp, LinkClass::kNode).time(bytes));
  const double layers = static_cast<double>(plan.config.model.layers) / plan.schedule.stages;
  // Full recompute replays the forward's two.
  const double collectives = plan.config.train.recompute == Recompute::kFull ? 6 : 4;
  return collectives * std::max(0.0, per) * layers * static_cast<double>(c.microbatches);
}

}  // namespace

Prediction predict(const RunPlan& plan, const Candidate& c, const Profile& profile,
                   const PlanTopology& topology, PredictCache* cache) {
  const Config& config = plan.config;
  Prediction out;
  double activation_bytes = 4;
  for (int64_t d : plan.activation_shape) activation_bytes *= static_cast<double>(d);
  // What the messages carry (memory's formulas count fp32 activations).
  const double message_bytes = activation_bytes / 4 * profile.message_element_bytes;

  const CoreShare share = core_share(profile, topology);
  ComputeTiming t =
      profile.timing(c.tp, plan.batch.micro_batch, config.train.recompute, plan.sequence_parallel);
  if (config.train.micro_batch_invariant && plan.batch.micro_batch > 1) {
    // Micro-batches computed sample by sample (Note [Sample units]): b one-sample passes.
    const double b = static_cast<double>(plan.batch.micro_batch);
    const ComputeTiming one =
        profile.timing(c.tp, 1, config.train.recompute, plan.sequence_parallel);
    for (auto [to, from] : {std::pair{&t.layer, &one.layer}, std::pair{&t.first, &one.first},
                            std::pair{&t.last, &one.last}}) {
      to->forward = b * from->forward;
      to->backward = b * from->backward;
    }
  }
  const ComputeTiming whole = t;  // one process's layer: the ring's exchanges hide behind it
  scale_for_context(t, c, config.model, profile.op_seconds);
  const std::vector<ChunkCost> costs = stage_costs(plan, t, share.scale);
  const SimulationResult sim =
      simulate_pipeline(plan, costs, message_bytes, profile, topology, share, cache);
  out.compute = *std::max_element(sim.busy.begin(), sim.busy.end());
  out.bubble = sim.makespan - out.compute;
  out.bubble_fraction = sim.bubble_fraction;

  double most_parameters = 0;
  for (int r = 0; r < plan.schedule.stages; ++r) {
    RankMemory m = rank_memory(plan, c, r, activation_bytes, cache);
    m.in_flight = sim.peak_activations[r];
    out.peak_bytes = std::max(out.peak_bytes, m.total());
    most_parameters = std::max(most_parameters, m.fp32_parameters);  // ZeRO-3: not its slices
    out.memory.push_back(m);
  }

  const DpSync sync = dp_sync_seconds(plan, c, profile, topology, most_parameters);
  out.dp_comm = sync.reduce + sync.gather;
  if (profile.overlaps_grad_sync && sync.reduce > 0) {
    // Buckets are reduced while backward goes on: during the last micro-batch's backward
    // (ZeRO-2 and -3: during every one's); what outlasts it, and at least the last bucket,
    // shows. The gathers follow the update.
    std::vector<double> backward(plan.schedule.stages, 0.0);
    for (int s = 0; s < plan.schedule.total_stages(); ++s) {
      backward[plan.schedule.rank_of(s)] += costs[s].backward;
    }
    const bool every = c.shard == ShardLevel::kGradients || c.shard == ShardLevel::kParameters;
    const double window = *std::min_element(backward.begin(), backward.end()) *
                          (every ? static_cast<double>(c.microbatches) : 1.0);
    const double grad_bytes = most_parameters / 4 * MixedPrecision(config).wire_bytes();
    const double bucket = config.ddp.bucket_mb * 1024 * 1024;
    const double last = sync.reduce * std::min(1.0, bucket / std::max(1.0, grad_bytes));
    out.dp_comm = std::max(last, sync.reduce - window) + sync.gather;
  }
  out.tp_cross = tp_cross_seconds(plan, c, profile, topology, message_bytes);
  ComputeTiming scaled = whole;
  scaled.layer.forward *= share.scale, scaled.layer.backward *= share.scale;
  out.cp_comm = cp_exchange_seconds(plan, c, profile, topology, scaled);
  out.optimizer =
      profile.optimizer_per_parameter * (most_parameters / 4) / c.state_shards() * share.load;
  out.overhead = profile.step_overhead;
  out.step_seconds = sim.makespan + out.communication() + out.optimizer + out.overhead;
  return out;
}

}  // namespace triax
