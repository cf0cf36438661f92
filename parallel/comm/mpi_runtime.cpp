#include "parallel/comm/mpi_runtime.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "parallel/comm/mpi_check.h"
#include "parallel/comm/pmi_finalize.h"

namespace triax {
namespace {
constexpr int kFinalizeDeadlineSeconds = 10;
constexpr std::chrono::milliseconds kPmiAckDeadline{3000};

// hydra's PMI-1 socket, from PMI_FD, when mpirun started this process; else -1. Slurm's PMI-2
// also sets PMI_FD but speaks another protocol, and srun does not kill a job over a task that
// leaves without finalizing: the handshake is hydra's alone.
int hydra_pmi_fd() {
  try {
    if (detect_launch(process_env()).launcher != Launcher::kHydra) return -1;
  } catch (const std::exception&) {
    return -1;  // malformed launcher variables: check_matches' caller reports them
  }
  const char* text = std::getenv("PMI_FD");
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  return (*end == '\0' && fd >= 0 && fd < 1 << 20) ? static_cast<int>(fd) : -1;
}
}  // namespace

std::string launch_mismatch(const LaunchEnv& launch, int mpi_rank, int mpi_size) {
  if (mpi_size == launch.world_size && mpi_rank == launch.rank) return "";
  const int n = launch.world_size;
  const std::string seen = str("the launcher (", launcher_name(launch.launcher), ") started rank ",
                               launch.rank, " of ", n, ", but MPI formed a world of ", mpi_size);
  switch (launch.launcher) {
    case Launcher::kTorchrun:
      return str(
          seen, ": MPICH cannot join torchrun's processes into one world. Launch with `mpirun -np ",
          n, " triax ...`, or under Slurm `srun --mpi=pmi2 -n ", n,
          " triax ...`, or keep torchrun with comm.backend: tcp (or auto).");
    case Launcher::kSrun:
      return str(seen,
                 ": the job step has no PMI that MPICH understands (Debian's MPICH has no "
                 "PMIx). Launch with `srun --mpi=pmi2 ...`, or `mpirun -np ",
                 n, " triax ...`.");
    case Launcher::kEnv:
      return str(seen,
                 ": RANK/WORLD_SIZE were set by hand, but the MPI backend needs an MPI "
                 "launcher. Launch with `mpirun -np ",
                 n,
                 " triax ...`, or unset RANK and WORLD_SIZE, or set comm.backend: tcp with "
                 "MASTER_ADDR and MASTER_PORT.");
    case Launcher::kHydra:
    case Launcher::kSingle:
      break;
  }
  return str(seen,
             ": launch with `mpirun -np N triax ...` using the same MPI that triax was built "
             "with (MPICH).");
}

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  TRIAX_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    // MULTIPLE: later backward hooks may start collectives off the main thread.
    TRIAX_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    owns_ = true;
    hydra_pmi_fd_ = hydra_pmi_fd();
  }
  TRIAX_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  TRIAX_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  TRIAX_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

// MPI_Finalize closes the transport's connections. MPICH 4.0's UCX netmod passes a PMI barrier,
// then disconnects from every peer and spins until each disconnect completes; a peer that has
// already finished its own loop and torn down its worker never answers, and the spin never ends
// (seen between namespace nodes: every srun run, and now and then under mpirun). Finalize comes
// after triax's own final barrier, when every rank's work is done and saved, so a finalize that
// outlives the deadline ends the process as it would have ended: with status 0, after saying so.
// Under mpirun the rank first tells hydra it has finished (pmi1_finalize): hydra kills the whole
// job, peers that finalized cleanly included, when a process leaves without that
// ("BAD TERMINATION ... EXIT CODE: 9" after a run that had succeeded). The handshake reads the
// PMI socket from this thread; that is safe in the hang above, past the PMI barrier, where
// MPI_Finalize no longer reads it. Were a rank instead stuck in the barrier itself (a peer that
// never reached finalize), MPI_Finalize's own read could take the acknowledgement and fail.
MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!owns_ || finalized) return;
  if (leave_) {
    if (hydra_pmi_fd_ >= 0) pmi1_finalize(hydra_pmi_fd_, kPmiAckDeadline);
    return;
  }
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (done_cv.wait_for(lock, std::chrono::seconds(kFinalizeDeadlineSeconds),
                         [&] { return done; })) {
      return;
    }
    std::fprintf(stderr,
                 "[rank %d] note: MPI_Finalize did not return within %d s (a transport's "
                 "shutdown race between nodes); exiting anyway: the run had finished\n",
                 rank_, kFinalizeDeadlineSeconds);
    if (hydra_pmi_fd_ >= 0 && !pmi1_finalize(hydra_pmi_fd_, kPmiAckDeadline)) {
      std::fprintf(stderr,
                   "[rank %d] warning: mpirun did not acknowledge this rank's end; it may "
                   "report the job as failed although the run had finished\n",
                   rank_);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(0);
  });
  MPI_Finalize();
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  done_cv.notify_one();
  watchdog.join();
}

void MpiRuntime::check_matches(const LaunchEnv& launch) const {
  const std::string problem = launch_mismatch(launch, rank_, size_);
  if (!problem.empty()) throw ConfigError(str("launch: ", problem));
}

void MpiRuntime::abort(int code) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace triax
