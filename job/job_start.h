// defines: triax::kExitFailure, triax::kExitUsage, triax::JobStart, triax::JobSteps,
//          triax::run_job
//
// The one start-up of a multi-rank job (`triax train`, `triax calibrate`, the benchmarks in
// tools/bench/), in three phases with the error policy of each (tools/triax_main.cpp's header):
//   1. without communication, identically on every rank: the launch (launcher variables), the
//      caller's `prepare` (the configuration, checked: it throws ConfigError), the backend and
//      the bf16 matmul path. A mistake prints one message per rank and exits 2 before any
//      communicator exists.
//   2. the world, and the check that it is the one the launcher announced (exit 2 if not).
//   3. the caller's `run`, with the compute threads chosen (job/thread_choice.h); from here an
//      error on one rank ends the job on every rank (job/failure_policy.h): 2 for a
//      configuration error, 1 otherwise.
#pragma once

#include <functional>

#include "core/config.h"
#include "core/launch_env.h"
#include "job/rank_table.h"
#include "job/thread_choice.h"
#include "parallel/comm/world.h"

namespace triax {

constexpr int kExitFailure = 1;  ///< the job failed
constexpr int kExitUsage = 2;    ///< what the user asked for is invalid

/// What phase 1 found.
struct JobStart {
  LaunchEnv launch;
  Config config;
  Backend backend = Backend::kMpi;
};

struct JobSteps {
  /// Phase 1: the run's configuration, checked (throws ConfigError).
  std::function<Config(const LaunchEnv& launch)> prepare;
  /// Phase 1's last step (optional), once the configuration is known to be valid: claim what the
  /// run writes (create and probe its folders, test its lock), so that a refused run leaves
  /// nothing behind.
  std::function<void(const JobStart& start)> claim_outputs;
  /// Between phases 1 and 2 (optional): what must exist before the world does.
  std::function<void(const JobStart& start)> before_world;
  /// Phase 3. `ranks`: the rank table once the job knows it (a failure's report names hosts).
  std::function<void(World& world, const JobStart& start, const ThreadChoice& threads,
                     RankTable& ranks)>
      run;
  /// The job stops at SIGTERM/SIGUSR1 (training: after the step, with a checkpoint): their
  /// handlers are installed again after the world's start-up, which may have replaced them. A job
  /// that never looks at the stop flag (calibration) leaves them as start-up left them, so a
  /// SIGTERM still ends it.
  bool stops_on_signal = false;
};

/// The job's exit code: 0, or 2 when phase 1 or 2 refused (phase 3's failures end the process
/// through end_job_after_error and do not return).
int run_job(const JobSteps& steps, int* argc, char*** argv);

}  // namespace triax
