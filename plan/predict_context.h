// defines: triax::attention_share, triax::scale_for_context, triax::cp_exchange_seconds
//
// What context parallelism (parallel.context: C ranks splitting every sequence) changes in a
// prediction made from a profile measured at cp 1 (docs/plan.md, step 6): each rank's compute by
// its share of the layer's work, and the exchanges attention's compute does not hide.
#pragma once

#include "core/config.h"
#include "plan/candidate.h"
#include "plan/plan_topology.h"
#include "plan/profile.h"
#include "train/run_plan.h"

namespace triax {

/// Attention's share of a layer's FLOPs (scores and weighted sums against the matmuls), from
/// the model's own count.
double attention_share(const ModelConfig& model);

/// `t` (one process's layer, embedding and head times) as a rank of `c`'s cp group computes
/// them, the operations its blocks add at `op_seconds` each included. Nothing at cp 1.
void scale_for_context(ComputeTiming& t, const Candidate& c, const ModelConfig& model,
                       double op_seconds);

/// Seconds a step spends on cp exchanges beyond what attention hides, on the busiest pipeline
/// rank; `layer`: the profile's layer timing as one process runs it (compute scaled to the
/// plan's ranks per node). 0 at cp 1.
double cp_exchange_seconds(const RunPlan& plan, const Candidate& c, const Profile& profile,
                           const PlanTopology& topology, const ComputeTiming& layer);

}  // namespace triax
