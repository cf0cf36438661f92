// defines: triax::PlanRequest, triax::PlanRow, triax::LayoutPlan, triax::plan_layouts,
//          triax::LayoutChoice, triax::choose_layout, triax::mib
//
// `triax plan` and `parallel: auto`: every candidate (plan/candidate.h) predicted
// (plan/predict.h), those that do not fit the memory per rank dropped, the rest ranked by
// predicted step time (then by memory, then by name, so every rank of a job reaches the same
// verdict from the same inputs without communicating).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "plan/candidate.h"
#include "plan/predict.h"
#include "plan/profile.h"

namespace triax {

struct PlanRequest {
  int world = 1;
  int nodes = 1;
  double memory_per_rank = 0;  ///< bytes a rank may hold (process included); 0 = no limit
  /// Where the limit comes from ("h100's 80 GiB"); "" = --memory-per-rank or none.
  std::string memory_source;
  PlanConstraints constraints;
  int threads = 0;  ///< to plan on; 0 = the machine's cores
};

struct PlanRow {
  Candidate candidate;
  Prediction prediction;
  double tokens_per_second = 0;  ///< the model's units (tokens, samples) per second
  /// Model FLOPs utilisation: the model's FLOPs per unit (ModelSpec::flops_per_unit, recompute
  /// not counted) at that rate over every rank's peak; 0 where the peak is unknown.
  double mfu = 0;
};

struct LayoutPlan {
  std::vector<PlanRow> rows;    ///< fitting, fastest first
  int candidates = 0;           ///< valid candidates before the memory limit
  int too_big = 0;              ///< dropped by the memory limit
  double smallest_too_big = 0;  ///< the least a dropped layout needs, process included
  std::string profile_source;
  double base_bytes = 0;  ///< the profile's process base, added to each row's peak for the limit
  double peak_flops = 0;  ///< a rank's peak (device plans): MFU's denominator
  int world = 1;
  std::vector<std::string> notes;  ///< what the prediction assumed (scaling, nominal links)

  /// The ranked table: the first `top` rows (0 = all), each with its reason.
  std::string table(const Config& config, const PlanRequest& request, int top) const;
  /// One line: the best row, by how much it beats the runner-up, and the command to run it.
  std::string recommendation(const std::string& config_path) const;
  /// Machine-readable rows (benchmarks): one CSV line each, header first.
  std::string csv() const;
};

/// Bytes as MiB, the unit of the plan's tables.
inline double mib(double bytes) {
  return bytes / (1024.0 * 1024.0);
}

/// Throws ConfigError when the profile is for another model shape, or nothing fits.
LayoutPlan plan_layouts(const Config& config, const PlanRequest& request, const Profile& profile);

/// The profile parallel.profile names, or nominal costs when it is "".
Profile profile_for(const Config& config);

struct LayoutChoice {
  Config config;        ///< with the best layout's keys set
  std::string message;  ///< the choice, its prediction, and the runner-up
};

/// `parallel: auto`: the best layout for `world` ranks on `nodes` nodes (memory limit
/// parallel.memory_per_rank_mb), from files and arithmetic only, so every rank chooses the same.
LayoutChoice choose_layout(const Config& config, int world, int nodes,
                           const PlanConstraints& constraints = {});

}  // namespace triax
