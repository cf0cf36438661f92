// defines: triax::launch_nodes, triax::resolve_auto_layout, triax::run_plan,
//          triax::run_calibrate
//
// The planner's commands (plan/): `triax plan` (the ranked table, or with --rank a dry run of
// one rank), `triax calibrate` (every launched rank measures; rank 0 writes the profile), and
// `parallel: auto`'s resolution, which `triax train` and `triax config` call before anything
// else is decided.
#pragma once

#include <string>

#include "core/config.h"
#include "core/launch_env.h"
#include "tools/cli_args.h"

namespace triax {

/// Nodes as the launcher says (ranks per node: MPI_LOCALNRANKS, LOCAL_WORLD_SIZE, ...).
int launch_nodes(const LaunchEnv& launch);

/// `config` with `parallel: auto` resolved for `world` ranks on `nodes` nodes (unchanged when
/// auto is off); `resume` is train's --resume, whose checkpoint keeps its tp, pp and chunks.
/// Prints the choice (rank 0). Throws ConfigError, on every rank alike.
Config resolve_auto_layout(const Config& config, int world, int nodes, const std::string& resume);

/// `triax plan`: exit code.
int run_plan(const CliArgs& args);

/// `triax calibrate`, under a launcher: exit code.
int run_calibrate(const CliArgs& args, int* argc, char*** argv);

}  // namespace triax
