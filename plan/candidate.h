// defines: triax::Candidate, triax::PlanConstraints, triax::enumerate_candidates
//
// One way to run a configuration on N ranks: the layout (dp x cp x tp x pp, chunks per rank; the
// context-parallel mode), the pipeline schedule, the micro-batch size, and the memory levers
// (recompute, ZeRO-1/2/3, sequence parallelism, node-aware all-reduce). enumerate_candidates lists
// every one that the run's own rules accept (each candidate is checked by plan_run, the function
// `triax train` checks with, so the planner can never propose a layout training would refuse), for
// the configuration's model and global batch. What stays the configuration's own: the model, global
// batch, optimizer, precision, data.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "train/run_plan.h"

namespace triax {

struct Candidate {
  int dp = 1, tp = 1, pp = 1;
  int cp = 1;  ///< parallel.context: ranks splitting every sequence
  ContextMode context_mode = ContextMode::kRing;  ///< when cp > 1
  int chunks = 1;  ///< model chunks per pipeline rank (interleaved: 2, 4, 8; zbv: 2)
  ScheduleKind schedule = ScheduleKind::k1F1B;
  int64_t micro_batch = 1;
  int64_t microbatches = 1;  ///< per step, per dp rank
  Recompute recompute = Recompute::kNone;
  ShardLevel shard =
      ShardLevel::kNone;  ///< ddp.shard: none, optimizer (1), gradients (2), parameters (3)
  int shard_group = 0;  ///< when sharded: hybrid sharding over groups of this many dp ranks; 0 = dp
  bool sequence = false;
  /// Chosen only where the dp groups span nodes (true or false); else kAuto: the
  /// configuration's ddp.hierarchical stays.
  Hierarchical hierarchical = Hierarchical::kAuto;

  bool sharded() const { return shard != ShardLevel::kNone; }
  /// The ranks holding the same weights, over which gradients are reduced: dp x cp.
  int replicas() const { return dp * cp; }
  /// How many ranks split the optimizer state (and, ZeRO-2, the gradients): 1 unsharded, else
  /// the shard group (all of dp x cp unless hybrid).
  int state_shards() const { return sharded() ? (shard_group > 0 ? shard_group : replicas()) : 1; }
  /// The configuration with this candidate's choices in it.
  Config applied(const Config& base) const;
  /// "dp2 tp2 pp2 1f1b b4x4 none" and the levers that are on ("zero1 sp hier"; zero2 for
  /// ddp.shard: gradients, zero3 for parameters, zero1/4 for hybrid groups of 4); with context
  /// parallelism "cp2 ring" or "cp2 a2a" after pp.
  std::string describe() const;
  /// "--set parallel.tensor=2 --set parallel.pipeline=2 ...": what makes `triax train` run it.
  std::string overrides() const;
};

/// What a plan must keep (a checkpoint's tp, pp and stage placement when resuming).
struct PlanConstraints {
  int tp = 0;                               ///< 0 = any
  int pp = 0;                               ///< 0 = any
  int chunks = 0;                           ///< 0 = any
  std::optional<PlacementShape> placement;  ///< none = any
  std::string reason;                       ///< why (printed with the plan)
};

/// Every valid candidate for `world` ranks on `nodes` nodes (ranks in equal consecutive blocks);
/// `each` sees every candidate with its RunPlan (checking made it) as it is found: a plan of
/// thousands predicts them one by one rather than keeping every RunPlan. `schedules`: a cache
/// shared with other calls (plan_layouts' threads), or null for the call's own.
std::vector<Candidate> enumerate_candidates(
    const Config& config, int world, int nodes, const PlanConstraints& constraints = {},
    const std::function<void(const Candidate&, const RunPlan&)>& each = nullptr,
    ScheduleCache* schedules = nullptr);

}  // namespace triax
