#include "plan/candidate.h"

#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "parallel/parallel_layout.h"
#include "plan/plan_topology.h"

namespace triax {

Config Candidate::applied(const Config& base) const {
  Config c = base;
  c.parallel.tensor = tp;
  c.parallel.pipeline = pp;
  c.parallel.data = 0;
  c.parallel.context = cp;
  c.parallel.context_mode = context_mode;
  c.parallel.sequence = sequence;
  c.schedule.name = schedule;
  c.schedule.chunks_per_rank = chunks;
  c.schedule.microbatches = 0;
  c.schedule.layer_boundaries = {};  // the cost-balanced split of this pp
  c.train.micro_batch = micro_batch;
  c.train.recompute = recompute;
  c.train.recompute_layers = 0;
  c.ddp.shard = shard;
  c.optimizer.shard = false;  // the older spelling would raise ddp.shard: none to optimizer
  c.optimizer.shard_group = sharded() ? shard_group : 0;
  if (hierarchical != Hierarchical::kAuto) c.ddp.hierarchical = hierarchical;
  return c;
}

std::string Candidate::describe() const {
  std::string text = str("dp", dp, " tp", tp, " pp", pp, " ");
  if (cp > 1) text += str("cp", cp, context_mode == ContextMode::kRing ? " ring " : " a2a ");
  if (pp > 1) text += choice_name(schedule) + (chunks > 1 ? str("x", chunks) : "") + " ";
  text += str("b", micro_batch, "x", microbatches, " ", choice_name(recompute));
  if (shard == ShardLevel::kOptimizer) text += " zero1";
  if (shard == ShardLevel::kGradients) text += " zero2";
  if (shard == ShardLevel::kParameters) text += " zero3";
  if (sharded() && shard_group > 0 && shard_group < dp) text += str("/", shard_group);
  if (sequence) text += " sp";
  if (hierarchical == Hierarchical::kTrue) text += " hier";
  if (hierarchical == Hierarchical::kFalse) text += " flat";
  return text;
}

std::string Candidate::overrides() const {
  return str(
      "--set parallel.tensor=", tp, " --set parallel.pipeline=", pp, " --set parallel.context=", cp,
      cp > 1 ? " --set parallel.context_mode=" + choice_name(context_mode) : std::string(),
      " --set schedule.name=", choice_name(schedule), " --set schedule.chunks_per_rank=", chunks,
      " --set train.micro_batch=", micro_batch, " --set train.recompute=", choice_name(recompute),
      " --set ddp.shard=", choice_name(shard), " --set optimizer.shard=false",
      " --set optimizer.shard_group=", sharded() ? shard_group : 0,
      " --set parallel.sequence=", sequence ? "true" : "false",
      hierarchical == Hierarchical::kAuto ? std::string()
                                          : " --set ddp.hierarchical=" + choice_name(hierarchical));
}

namespace {

std::vector<int> divisors(int64_t n) {
  std::vector<int> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

// Whether ddp.hierarchical is a choice: the dp groups span nodes with an equal share of at
// least 2 ranks on each (ParallelContext's rule for `auto`).
bool dp_spans_nodes_evenly(const ParallelLayout& layout, const PlanTopology& topology) {
  if (layout.dp_size() < 2) return false;
  for (const auto& group : layout.groups(Axis::kDp)) {
    if (!topology.nodes.spans_nodes(group) || topology.nodes.even_share(group) < 2) return false;
  }
  return true;
}

struct Context {
  int cp;
  ContextMode mode;
};

// The context-parallel sizes and modes worth trying on `ranks` ranks (what tp x pp leaves): cp 1,
// and for a language model every divisor whose head-tail split cuts seq_len evenly (2 cp chunks),
// in both modes (plan_run refuses what the heads do not allow).
std::vector<Context> contexts(const Config& config, int ranks) {
  std::vector<Context> out = {{1, ContextMode::kRing}};
  if (!model_spec(config.model.arch).pipelined) return out;
  for (int cp : divisors(ranks)) {
    if (cp == 1 || config.model.seq_len % (2 * cp) != 0) continue;
    out.push_back({cp, ContextMode::kRing});
    out.push_back({cp, ContextMode::kAllToAll});
  }
  return out;
}

bool replicas_span_nodes(const ParallelLayout& layout, const PlanTopology& topology) {
  for (const auto& group : layout.replica_groups()) {
    if (topology.nodes.spans_nodes(group)) return true;
  }
  return false;
}

}  // namespace

std::vector<Candidate> enumerate_candidates(
    const Config& config, int world, int nodes, const PlanConstraints& constraints,
    const std::function<void(const Candidate&, const RunPlan&)>& each,
    ScheduleCache* shared_schedules) {
  const PlanTopology topology(world, nodes);
  const ModelSpec& spec = model_spec(config.model.arch);
  const bool pipelined = spec.pipelined;
  std::vector<Candidate> out;
  ScheduleCache own;  // the layouts share a few schedules
  ScheduleCache& schedules = shared_schedules ? *shared_schedules : own;
  for (int tp : divisors(world)) {
    if (constraints.tp > 0 && tp != constraints.tp) continue;
    if (!pipelined && tp > 1) continue;
    for (int pp : divisors(world / tp)) {
      if (constraints.pp > 0 && pp != constraints.pp) continue;
      if (!pipelined && pp > 1) continue;
      if (pp > config.model.layers) continue;
      for (const Context& context : contexts(config, world / (tp * pp))) {
        const int cp = context.cp;
        const int dp = world / (tp * pp * cp);
        if (config.train.global_batch % dp != 0) continue;
        // The family's layout rules (heads over tp, context parallelism's) depend on tp, pp, cp
        // and its mode: what they refuse is skipped here whole, not refused candidate by
        // candidate by plan_run (an exception each: most of a large plan's time otherwise).
        Config probe = config;
        probe.parallel.tensor = tp, probe.parallel.pipeline = pp;
        probe.parallel.context = cp, probe.parallel.context_mode = context.mode;
        probe.parallel.sequence = false;
        probe.schedule.name = ScheduleKind::k1F1B;  // as Candidate::applied for one chunk
        probe.schedule.chunks_per_rank = 1;
        try {
          spec.check_layout(probe);
        } catch (const ConfigError&) {
          continue;
        }
        const ParallelLayout layout =
            ParallelLayout::create(world, tp, pp, config.parallel.order, cp);
        const int64_t per_dp = config.train.global_batch / dp;
        struct Shape {
          ScheduleKind kind;
          int chunks;
        };
        std::vector<Shape> shapes;
        if (pp == 1) {
          shapes.push_back({ScheduleKind::k1F1B, 1});
        } else {
          for (ScheduleKind k : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbh1}) {
            shapes.push_back({k, 1});
          }
          // Megatron's virtual stages: 2, 4, 8 chunks per rank while every chunk has a layer.
          for (int v = 2; v <= 8 && pp * v <= config.model.layers; v *= 2) {
            shapes.push_back({ScheduleKind::kInterleaved, v});
          }
          if (2 * pp <= config.model.layers) shapes.push_back({ScheduleKind::kZbv, 2});
        }
        std::vector<Hierarchical> hier = {Hierarchical::kAuto};
        // Under cp the gradients are reduced over dp x cp, which the node-aware model does not
        // cover (not under hybrid groups either: cp shards over all of dp x cp): flat, pinned
        // where `auto` would turn node-aware on at run time.
        if (cp > 1 && replicas_span_nodes(layout, topology)) hier = {Hierarchical::kFalse};
        if (cp == 1 && dp_spans_nodes_evenly(layout, topology))
          hier = {Hierarchical::kFalse, Hierarchical::kTrue};
        for (const Shape& shape : shapes) {
          if (constraints.chunks > 0 && shape.chunks != constraints.chunks) continue;
          if (constraints.placement && placement_shape(shape.kind) != *constraints.placement) {
            continue;
          }
          for (int b : divisors(per_dp)) {
            // The interleaved schedule's rule (schedules/schedule.h), skipped likewise.
            if (shape.kind == ScheduleKind::kInterleaved && (per_dp / b) % pp != 0) continue;
            for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
              if (!pipelined && r != Recompute::kNone) continue;
              for (ShardLevel level : {ShardLevel::kNone, ShardLevel::kOptimizer,
                                       ShardLevel::kGradients, ShardLevel::kParameters}) {
                const bool zero = level != ShardLevel::kNone;
                // bf16 working weights keep their master in the sharded optimizer: never unsharded,
                // and ZeRO-1 at dp 1 (a shard of one) is their dp-1 layout.
                const bool master = config.train.param_dtype == Precision::kBf16;
                if (master && !zero) continue;
                // (The state is sharded over the replicas, dp x cp.)
                const bool alone = dp * cp == 1 && !(master && level == ShardLevel::kOptimizer);
                if (zero && (alone || config.train.optimizer != OptimizerKind::kAdamW)) continue;
                // Layout-invariant numerics reduce ZeRO-2 as ZeRO-1 (the tree): not a choice there,
                // and ZeRO-3 is refused there.
                if ((level == ShardLevel::kGradients || level == ShardLevel::kParameters) &&
                    config.train.numerics == Numerics::kLayoutInvariant) {
                  continue;
                }
                for (bool sp : {false, true}) {
                  if (sp && tp == 1) continue;
                  for (Hierarchical h : hier) {
                    Candidate c;
                    c.dp = dp, c.tp = tp, c.pp = pp, c.chunks = shape.chunks;
                    c.cp = cp, c.context_mode = context.mode;
                    c.schedule = shape.kind;
                    c.micro_batch = b;
                    c.microbatches = per_dp / b;
                    c.recompute = r, c.shard = level, c.sequence = sp, c.hierarchical = h;
                    // The configuration's hybrid group where it tiles this dp (else all of dp).
                    const int group = static_cast<int>(config.optimizer.shard_group);
                    if (zero && group > 0 && cp == 1 && dp % group == 0) c.shard_group = group;
                    std::optional<RunPlan> plan;
                    try {
                      plan = plan_run(c.applied(config), world, DataCheck::kSkip, &schedules);
                    } catch (const ConfigError&) {
                      continue;  // a rule of the run refuses it (heads % tp, m % p, ...)
                    }
                    // Outside the try: the caller's errors (a profile lacking a timing) are
                    // the user's to see, not a refusal of this layout.
                    if (each) each(c, *plan);
                    out.push_back(c);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace triax
