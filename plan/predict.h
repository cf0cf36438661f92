// defines: triax::RankMemory, triax::Prediction, triax::predict
//
// One candidate's per-rank peak memory and step time, from the run's plan (train/run_plan.h:
// schedule, stage split, activation shapes) and a profile (plan/profile.h).
// Memory, per pipeline rank (tp and dp ranks of one stage hold the same): the model spec's
// formula (models/transformer_memory.h for the transformers) for each chunk the rank holds —
// parameters, gradients (ZeRO-1 adds the averaged slice, 1/dp), optimizer state (AdamW 2 x
// parameters, /dp with ZeRO-1; SGD with momentum 1 x) — and activations from the rank's own program
// (schedules/action_memory.h): what each micro-batch keeps from its forward to its backward (B, or
// W after a split: then also the gradients W needs from I), the messages sent (alive until the step
// ends) and a recomputed block's replay; with checkpoint.async and periodic saves, dp rank 0's copy
// of its shard (parameters and the whole optimizer state, ZeRO-1's gathered) that lives through the
// next steps while it is written. Step time: the schedule simulated with each rank's forward /
// backward (input and weight parts for the zero-bubble schedules) from the profile's layer,
// embedding and head times and the stage split, and messages between stages at the send/recv fit
// for the activation's bytes on the link between the two ranks' nodes; then the data-parallel
// gradient sync (all-reduce, or ZeRO-1's reduce-scatter and all-gather; node-aware: inside, across,
// inside) on the dp group's links, counted as not overlapped on a CPU profile (the sums run on the
// cores backward uses; on a device, Profile::overlaps_grad_sync, what outlasts backward); then the
// optimizer step (per parameter, /dp with ZeRO-1) and the profile's per-step overhead. A tp group
// that crosses nodes adds its collectives' difference between the two link classes. Context
// parallelism (cp ranks splitting each sequence; the profile is measured at cp 1): a layer's
// matmuls and the first and last stages' work scale by 1/cp; attention's scores and weighted sums
// (their share of the layer's FLOPs, from the model's FLOP count) by (2cp + 1) / (4cp^2) for the
// ring, which computes only the chunk pairs a causal mask leaves visible (one process computes the
// whole s x s product on a CPU), and by 1/cp for all-to-all (its heads over the whole sequence);
// the ring's exchanges count where a block's transfer outlasts the block's attention, all-to-all's
// in full; the gradient sync spans dp x cp. When the plan's ranks per node differ from the
// profile's, compute times scale with the ratio (ranks on a node share its cores); on an
// oversubscribed CPU node the pipeline is simulated with shared cores, so a rank waiting in a
// bubble speeds up the others (simulate_shared).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plan/candidate.h"
#include "plan/plan_topology.h"
#include "plan/profile.h"
#include "schedules/schedule_check.h"
#include "train/run_plan.h"

namespace triax {

/// Bytes one rank holds at its peak (tensor data; the process adds Profile::base_bytes).
struct RankMemory {
  /// The working weights held at the peak: fp32, or bf16 (train.param_dtype), whole, or ZeRO-3's
  /// slices and gathered units.
  double parameters = 0;
  /// The rank's whole parameters in fp32 (gradients, optimizer state and messages scale by it).
  double fp32_parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double checkpoint_snapshot = 0;  ///< checkpoint.async: the copy being written (dp rank 0)
  int in_flight = 0;               ///< micro-batch chunks held at the peak
  double total() const {
    return parameters + gradients + optimizer + activations + checkpoint_snapshot;
  }
};

struct Prediction {
  double step_seconds = 0;
  double compute = 0;  ///< the busiest rank's compute time
  double bubble = 0;   ///< pipeline makespan minus that
  double bubble_fraction = 0;
  double dp_comm = 0;   ///< gradient sync (and ZeRO-1's all-gather)
  double tp_cross = 0;  ///< tp collectives beyond the measured layer times (across nodes)
  /// Context parallelism's exchanges not hidden behind attention (the ring's blocks beyond the
  /// block compute they overlap; all-to-all's four exchanges each way in full).
  double cp_comm = 0;
  double optimizer = 0;
  double overhead = 0;
  std::vector<RankMemory> memory;  ///< per pipeline rank
  double peak_bytes = 0;           ///< the largest total()
  /// Every communication counted outside the simulated pipeline.
  double communication() const { return dp_comm + tp_cross + cp_comm; }
  /// What bounds the step most: "compute", "bubble", "communication".
  std::string bound() const;
};

/// What candidates share (a plan predicts thousands: ZeRO levels and node-aware sync leave the
/// pipeline as it is): the simulated pipeline and each rank's activation peak, by their inputs
/// (the schedule's name and shape, the costs, the bytes). For one profile and topology.
struct PredictCache {
  std::map<std::pair<std::string, std::vector<double>>, SimulationResult> simulations;
  std::map<std::pair<std::string, std::vector<double>>, double> activation_peaks;
};

/// `cache`: where to find and keep the shared parts (null: compute them).
Prediction predict(const RunPlan& plan, const Candidate& candidate, const Profile& profile,
                   const PlanTopology& topology, PredictCache* cache = nullptr);

}  // namespace triax
