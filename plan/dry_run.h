// defines: triax::dry_run
//
// `triax plan CONFIG --world N --rank R`: what rank R of an N-rank job of the configured layout
// would build — its coordinate and groups, its pipeline chunks and their layers, its schedule's
// actions, its memory plan and the predicted step — in one process, without MPI or a model, so a
// 1024-rank YAML is checked on a laptop in well under a second. The group table is summarised
// at such sizes (ParallelLayout::table), in full with `full_groups`.
#pragma once

#include <string>

#include "core/config.h"
#include "plan/profile.h"

namespace triax {

/// Throws ConfigError, as `triax train` would on every rank, when the layout is invalid.
std::string dry_run(const Config& config, int world, int nodes, int rank, bool full_groups,
                    const Profile& profile);

}  // namespace triax
