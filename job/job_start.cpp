#include "job/job_start.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "core/bf16_matmul.h"
#include "core/compute_threads.h"
#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/mixed_precision.h"
#include "core/strings.h"
#include "job/death_watch.h"
#include "job/failure_policy.h"
#include "job/stop_signal.h"

namespace triax {

int run_job(const JobSteps& steps, int* argc, char*** argv) {
  // 1. Everything that needs no communication, on every rank alike.
  JobStart start;
  try {
    start.launch = detect_launch(process_env());
    log::set_prefix(str("[rank ", start.launch.rank, "]"));
    log::set_is_root(start.launch.rank == 0);  // pre-communication notes once, errors on every rank
    start.config = steps.prepare(start.launch);
    start.backend = resolve_backend(start.config.comm.backend, start.launch);
    MixedPrecision(start.config).select_matmul_path();  // refuses `native` where it is inexact
    if (steps.claim_outputs) steps.claim_outputs(start);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  }
  const LaunchEnv& launch = start.launch;
  Communicator::set_timeout(static_cast<double>(start.config.comm.timeout_s));
  if (steps.before_world) steps.before_world(start);

  // 2. The world, and the check that it is the one the launcher announced.
  std::unique_ptr<World> world;
  try {
    world = std::make_unique<World>(start.backend, launch,
                                    static_cast<int>(start.config.comm.timeout_s), argc, argv);
    if (steps.stops_on_signal) {
      install_stop_signals();  // again: MPI's start-up may have installed its own handlers
      flight::install_dump_signal();
    }
  } catch (const std::exception& e) {
    death_watch_done();
    log::error(e.what());
    return kExitUsage;
  }

  // 3. The job. From here on a failure on one rank must stop all of them.
  RankTable ranks;
  try {
    const ThreadChoice threads = choose_threads(
        start.config, launch, process_env(),
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), cpus_available());
    set_compute_threads(threads.threads);
    steps.run(*world, start, threads, ranks);
    death_watch_done();
  } catch (const ConfigError& e) {
    end_job_after_error(*world, e, kExitUsage, launch.rank, launch.world_size, ranks);
  } catch (const std::exception& e) {
    end_job_after_error(*world, e, kExitFailure, launch.rank, launch.world_size, ranks);
  }
  return 0;
}

}  // namespace triax
