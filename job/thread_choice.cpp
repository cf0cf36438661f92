#include "job/thread_choice.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/strings.h"

namespace triax {
namespace {

// A positive integer variable, or 0.
int positive(const EnvMap& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end()) return 0;
  const int value = std::atoi(it->second.c_str());
  return value > 0 ? value : 0;
}

}  // namespace

ThreadChoice choose_threads(const Config& config, const LaunchEnv& launch, const EnvMap& env,
                            int node_cpus, int affinity_cpus) {
  ThreadChoice c;
  const int ranks = std::max(1, launch.local_world_size);
  if (config.train.threads > 0) {
    c.threads = static_cast<int>(config.train.threads);
    c.source = "train.threads";
  } else if (const int omp = positive(env, "OMP_NUM_THREADS")) {
    c.threads = omp;
    c.source = "OMP_NUM_THREADS";
  } else if (const int slurm = positive(env, "SLURM_CPUS_PER_TASK")) {
    c.threads = slurm;
    c.source = "SLURM_CPUS_PER_TASK";
  } else if (affinity_cpus > 0 && affinity_cpus < node_cpus) {
    c.threads = affinity_cpus;
    c.source = str("the ", affinity_cpus, " CPU(s) this rank is bound to");
  } else {
    c.threads = std::max(1, node_cpus / ranks);
    c.source = str(node_cpus, " CPUs / ", ranks, " rank(s) on this node");
  }
  const int wanted = ranks * c.threads;
  if (wanted > node_cpus) {
    c.oversubscribed = true;
    c.warning = str(ranks, " ranks x ", c.threads, " thread(s) = ", wanted, " > ", node_cpus,
                    " CPUs on this node: ranks time-share cores and every collective waits for "
                    "the slowest (fewer ranks per node, or train.threads / OMP_NUM_THREADS so "
                    "that ranks x threads <= CPUs)");
  }
  return c;
}

int cpus_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace triax
