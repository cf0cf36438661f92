// defines: triax::Launcher, triax::LaunchEnv, triax::detect_launch, triax::process_env
//
// How was this process started? Each launcher leaves its own variables (see
// ../shared/ENVIRONMENT.md). They are checked in an order that resolves the overlaps:
//   1. torchrun     TORCHELASTIC_*  (it also sets RANK/WORLD_SIZE, so before "env")
//   2. hydra        HYDI_CONTROL_FD or MPI_LOCALRANKID (mpirun/mpiexec; before Slurm, because
//                   inside salloc/sbatch every mpiexec rank also carries SLURM_PROCID=0)
//   3. srun         SLURM_STEP_ID (a job step; an sbatch batch script has SLURM_PROCID=0 and
//                   SLURM_NTASKS=N but no step id, and is one process, not rank 0 of N)
//   4. env          hand-set RANK and WORLD_SIZE
//   5. single       nothing of the above
// Detection reads a plain map so that each launcher's variable set can be unit-tested.
#pragma once

#include <map>
#include <string>

namespace triax {

enum class Launcher { kSingle, kHydra, kSrun, kTorchrun, kEnv };

/// "single", "mpirun", "srun", "torchrun", "env".
const char* launcher_name(Launcher launcher);

struct LaunchEnv {
  Launcher launcher = Launcher::kSingle;
  int rank = 0;              ///< global rank as the launcher numbers it
  int world_size = 1;        ///< number of processes the launcher started
  int local_rank = 0;        ///< rank among the processes on this node
  int local_world_size = 1;  ///< processes on this node
  /// The node's index where the launcher gives one (srun SLURM_NODEID, torchrun GROUP_RANK),
  /// -1 otherwise (mpirun: nodes are told apart by hostname).
  int node_index = -1;
  std::string master_addr;  ///< torchrun/env rendezvous address (empty otherwise)
  int master_port = 0;      ///< torchrun/env rendezvous port (0 otherwise)
  /// torchrun's agent already serves the TCP store at master_addr:master_port; ranks join it
  /// as clients under the prefix "/worker/attempt_<restart_count>".
  bool agent_store = false;
  int restart_count = 0;  ///< torchrun: TORCHELASTIC_RESTART_COUNT

  /// One line for logs: "mpirun rank 2 of 4 (local 2 of 4)".
  std::string describe() const;
};

using EnvMap = std::map<std::string, std::string>;

/// Detects the launcher from `env`. Throws ConfigError when a launcher's variables are
/// present but malformed (naming the variable and its value).
LaunchEnv detect_launch(const EnvMap& env);

/// This process's environment as an EnvMap.
EnvMap process_env();

}  // namespace triax
