// defines: triax::ThreadChoice, triax::choose_threads, triax::cpus_available
//
// Compute threads per rank, from what the launcher gave the rank, in this order:
//   train.threads           the YAML, when set (> 0)
//   OMP_NUM_THREADS         the usual way to say it (torchrun sets 1 unless told otherwise)
//   SLURM_CPUS_PER_TASK     Slurm's --cpus-per-task
//   the affinity mask       when the launcher bound the rank to fewer CPUs than the node has
//                           (mpirun -bind-to, srun --cpu-bind, a cgroup), its size
//   cores / local ranks     otherwise: the node's CPUs shared by its ranks
// Pure (the environment and CPU counts come in), so each rule is unit-tested. The choice is
// printed at start; ranks x threads above the node's CPUs is oversubscription (ranks will
// time-share cores and every collective waits for the slowest), which is warned about.
#pragma once

#include <string>

#include "core/config.h"
#include "core/launch_env.h"

namespace triax {

struct ThreadChoice {
  int threads = 1;
  std::string source;  ///< which rule chose it, for the start-up line
  bool oversubscribed = false;
  std::string warning;  ///< set when oversubscribed: ranks x threads vs CPUs, and the fix
};

/// `node_cpus`: CPUs of the node; `affinity_cpus`: CPUs this process may run on.
ThreadChoice choose_threads(const Config& config, const LaunchEnv& launch, const EnvMap& env,
                            int node_cpus, int affinity_cpus);

/// CPUs in this process's affinity mask (sched_getaffinity), or the node's if unknown.
int cpus_available();

}  // namespace triax
