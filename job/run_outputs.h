// defines: triax::prepare_flight_records, triax::write_resolved_config
//
// What a run writes under run.dir before its first step (paths: core/run_paths.h):
//  - its flight-record folder, cleared of an earlier run's records and death-watch marks for
//    this rank (a stale record would blame a rank of the last run), and the death watch started
//    (job/death_watch.h) — before the world exists, so a rank that dies while joining is named;
//  - the resolved configuration (rank 0), from which the run can be reproduced.
#pragma once

#include "core/config.h"
#include "core/run_paths.h"

namespace triax {

/// Sets the flight recorder's rank and folder, removes this rank's stale records, starts the
/// death watch. Without a run.dir only the rank is set.
void prepare_flight_records(const RunPaths& paths, int rank, int world_size);

/// Rank 0 writes `config` to paths.resolved_config() and says so; others do nothing.
void write_resolved_config(const Config& config, const RunPaths& paths, int rank);

}  // namespace triax
