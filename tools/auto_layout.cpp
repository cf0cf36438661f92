#include "tools/auto_layout.h"

#include <algorithm>

#include "checkpoint/location.h"
#include "checkpoint/manifest.h"
#include "checkpoint/resume.h"
#include "core/log.h"
#include "core/strings.h"
#include "plan/planner.h"

namespace triax {

// Ranks per node as the launcher says (LOCAL_WORLD_SIZE, MPI_LOCALNRANKS, SLURM_NTASKS_PER_NODE):
// the planner's nodes. Every rank of a uniform job reads the same.
int launch_nodes(const LaunchEnv& launch) {
  const int per_node = std::max(1, launch.local_world_size);
  return launch.world_size % per_node == 0 ? launch.world_size / per_node : 1;
}

// `parallel: auto`: the planner's choice, from files and arithmetic only (the same on every
// rank). Resuming keeps the checkpoint's tp, pp and stage placement: they shape its shards.
Config resolve_auto_layout(const Config& config, int world, int nodes, const std::string& resume) {
  if (!config.parallel.automatic) return config;
  PlanConstraints constraints;
  const std::string spec = resolve_resume_spec(resume, config);
  if (!spec.empty()) {
    const Manifest manifest = open_checkpoint(spec, checkpoint_root(config));
    constraints.tp = static_cast<int>(manifest.tensor);
    constraints.pp = static_cast<int>(manifest.pipeline);
    constraints.chunks = static_cast<int>(manifest.chunks_per_rank);
    constraints.placement = placement_shape(manifest.config.schedule.name);
    constraints.reason = str("tp ", manifest.tensor, ", pp ", manifest.pipeline, " and ",
                             manifest.chunks_per_rank, " chunk(s) per rank of the checkpoint ",
                             manifest.dir, " (another layout: triax reshard it first)");
  }
  const LayoutChoice choice = choose_layout(config, world, nodes, constraints);
  log::info(choice.message);
  return choice.config;
}

}  // namespace triax
