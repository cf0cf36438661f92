// defines: triax::check_schedule, triax::simulate, triax::simulate_shared, triax::SimulationCosts,
//          triax::SimulationResult
//
// Verifies a schedule without running it, and costs it.
// check_schedule: every (chunk, micro-batch) has exactly one forward and either one backward
// (B) or one input-gradient pass (I) and one weight pass (W) on its rank, in the order F, B or
// F, I, W; every send has its receive on the named peer and vice versa; and a dependency
// simulation finishes (no deadlock; otherwise the stuck action of every rank is named). The
// executor checks every schedule it is given.
// simulate: ranks run their lists in order; a compute action takes its cost; a receive waits
// until the matching send has happened plus the transfer cost; sends never block. Yields the
// makespan, the bubble fraction (idle share of p x makespan) and the peak number of micro-batch
// activations each rank holds (forwards whose backward — B, or W after a split — has not run).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "schedules/schedule.h"

namespace triax {

struct SimulationCosts {
  double forward = 1.0;       ///< time of one chunk's forward
  double backward = 1.0;      ///< time of one chunk's whole backward (B = I + W)
  double transfer = 0.0;      ///< time from a send to the receive's completion
  double weight_share = 0.5;  ///< W's share of the backward: W = share * B, I = B - W
  double input() const { return backward * (1.0 - weight_share); }
  double weight() const { return backward * weight_share; }
  /// Optional, per rank: measured costs of F, B, I and W there (a stage's own costs: the first
  /// and last stages also run the embedding and the head). Empty: the figures above everywhere.
  std::vector<std::array<double, 4>> per_rank = {};
  double cost(ActionKind kind, int rank = -1) const;  ///< of a compute action
};

struct ActionTiming {
  double start = 0;
  double end = 0;
};

struct SimulationResult {
  bool finished = false;
  std::string stuck;  ///< when not finished: every rank's blocked action
  double makespan = 0;
  double bubble_fraction = 0;
  std::vector<int> peak_activations;               ///< per rank
  std::vector<double> busy;                        ///< per rank: time spent computing
  std::vector<std::vector<ActionTiming>> timings;  ///< per rank, per action
};

SimulationResult simulate(const Schedule& schedule, const SimulationCosts& costs = {});

/// The same with the ranks sharing processors (CPU ranks time-sharing a node's cores): a
/// compute action's cost is its work at full speed, and while k ranks compute each progresses at
/// rate(k) (e.g. min(1, cores / k)); busy is wall time spent computing. With rate = 1 it equals
/// simulate().
SimulationResult simulate_shared(const Schedule& schedule, const SimulationCosts& costs,
                                 const std::function<double(int)>& rate);

/// Throws triax::Error listing every problem found; returns normally for a valid schedule.
void check_schedule(const Schedule& schedule);

}  // namespace triax
