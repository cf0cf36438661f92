// defines: triax::launch_nodes, triax::resolve_auto_layout
//
// `parallel: auto` resolved before a run is planned (train, config --world, plan --rank): the
// planner's choice from files and arithmetic only, the same on every rank.
#pragma once

#include <string>

#include "core/config.h"
#include "core/launch_env.h"

namespace triax {

/// Ranks per node as the launcher says (LOCAL_WORLD_SIZE, MPI_LOCALNRANKS,
/// SLURM_NTASKS_PER_NODE): the planner's nodes.
int launch_nodes(const LaunchEnv& launch);

/// The planner's layout for `world` ranks on `nodes` nodes when parallel.auto is on (else
/// `config`); resuming keeps the checkpoint's tp, pp and stage placement.
Config resolve_auto_layout(const Config& config, int world, int nodes, const std::string& resume);

}  // namespace triax
