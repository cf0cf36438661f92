#include "core/launch_env.h"

#include <cstdlib>

#include "core/error.h"

extern char** environ;

namespace triax {
namespace {

bool has(const EnvMap& env, const std::string& key) {
  return env.count(key) != 0;
}

int int_var(const EnvMap& env, const std::string& key, int fallback, int min_value) {
  const auto it = env.find(key);
  if (it == env.end()) return fallback;
  char* end = nullptr;
  const long value = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || value < min_value || value > (1 << 30)) {
    throw ConfigError(str("launch: environment variable ", key, "='", it->second,
                          "' is not an integer >= ", min_value));
  }
  return static_cast<int>(value);
}

std::string string_var(const EnvMap& env, const std::string& key) {
  const auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

// Slurm writes tasks per node compressed: "4(x2),3" means nodes 0,1 have 4 tasks, node 2 has 3.
int slurm_tasks_on_node(const std::string& spec, int node) {
  int first_node = 0;
  for (const std::string& part : split(spec, ',')) {
    const auto paren = part.find("(x");
    const int tasks = std::atoi(part.substr(0, paren).c_str());
    const int repeat = paren == std::string::npos ? 1 : std::atoi(part.c_str() + paren + 2);
    if (node < first_node + repeat) return tasks;
    first_node += repeat;
  }
  return 0;
}

void check_rank_in_world(const LaunchEnv& launch, const char* rank_var, const char* size_var) {
  if (launch.rank >= launch.world_size) {
    throw ConfigError(str("launch: ", rank_var, "=", launch.rank, " is not below ", size_var, "=",
                          launch.world_size));
  }
}

}  // namespace

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kSingle:
      return "single";
    case Launcher::kHydra:
      return "mpirun";
    case Launcher::kSrun:
      return "srun";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kEnv:
      return "env";
  }
  return "unknown";
}

std::string LaunchEnv::describe() const {
  return str(launcher_name(launcher), " rank ", rank, " of ", world_size, " (local ", local_rank,
             " of ", local_world_size, ")");
}

LaunchEnv detect_launch(const EnvMap& env) {
  LaunchEnv launch;
  const bool torchrun = has(env, "TORCHELASTIC_RUN_ID") || has(env, "TORCHELASTIC_RESTART_COUNT");
  if (torchrun || (has(env, "RANK") && has(env, "WORLD_SIZE"))) {
    launch.launcher = torchrun ? Launcher::kTorchrun : Launcher::kEnv;
    launch.world_size = int_var(env, "WORLD_SIZE", 1, 1);
    launch.rank = int_var(env, "RANK", 0, 0);
    launch.local_rank = int_var(env, "LOCAL_RANK", launch.rank, 0);
    launch.local_world_size = int_var(env, "LOCAL_WORLD_SIZE", launch.world_size, 1);
    launch.master_addr = string_var(env, "MASTER_ADDR");
    launch.master_port = int_var(env, "MASTER_PORT", 0, 0);
    const std::string agent = string_var(env, "TORCHELASTIC_USE_AGENT_STORE");
    launch.agent_store = torchrun && (agent == "True" || agent == "true" || agent == "1");
    launch.restart_count = int_var(env, "TORCHELASTIC_RESTART_COUNT", 0, 0);
    launch.node_index = torchrun ? int_var(env, "GROUP_RANK", -1, 0) : -1;
    check_rank_in_world(launch, "RANK", "WORLD_SIZE");
  } else if (has(env, "HYDI_CONTROL_FD") || has(env, "MPI_LOCALRANKID")) {
    launch.launcher = Launcher::kHydra;
    launch.world_size = int_var(env, "PMI_SIZE", 1, 1);
    launch.rank = int_var(env, "PMI_RANK", 0, 0);
    launch.local_rank = int_var(env, "MPI_LOCALRANKID", 0, 0);
    launch.local_world_size = int_var(env, "MPI_LOCALNRANKS", 1, 1);
    check_rank_in_world(launch, "PMI_RANK", "PMI_SIZE");
  } else if (has(env, "SLURM_STEP_ID")) {
    launch.launcher = Launcher::kSrun;
    launch.world_size = int_var(env, "SLURM_NTASKS", int_var(env, "SLURM_NPROCS", 1, 1), 1);
    launch.rank = int_var(env, "SLURM_PROCID", 0, 0);
    launch.local_rank = int_var(env, "SLURM_LOCALID", 0, 0);
    const int node = int_var(env, "SLURM_NODEID", 0, 0);
    launch.node_index = has(env, "SLURM_NODEID") ? node : -1;
    const std::string per_node = has(env, "SLURM_STEP_TASKS_PER_NODE")
                                     ? string_var(env, "SLURM_STEP_TASKS_PER_NODE")
                                     : string_var(env, "SLURM_TASKS_PER_NODE");
    const int on_node = per_node.empty() ? 0 : slurm_tasks_on_node(per_node, node);
    launch.local_world_size = on_node > 0 ? on_node : launch.world_size;
    check_rank_in_world(launch, "SLURM_PROCID", "SLURM_NTASKS");
  }
  // Otherwise a single process, including an sbatch batch script (SLURM_JOB_ID without a step).
  return launch;
}

EnvMap process_env() {
  EnvMap env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const auto eq = text.find('=');
    if (eq != std::string::npos) env[text.substr(0, eq)] = text.substr(eq + 1);
  }
  return env;
}

}  // namespace triax
