// defines: triax::World, triax::resolve_backend
//
// The job's world communicator and whatever runtime it needs, chosen by `comm.backend`:
//   mpi   MPICH (mpirun/mpiexec, srun --mpi=pmi2); MPI is initialised and checked against the
//         launcher's world (a mismatch stops with the command that works)
//   tcp   Gloo over a TCP store (torchrun, or hand-set MASTER_ADDR/PORT, RANK, WORLD_SIZE);
//         MPI is not touched
//   auto  tcp under torchrun, mpi otherwise
// After the world exists an error on one rank must end them all, as peers may wait in a
// collective it will never join: abort() does that for either backend.
#pragma once

#include <memory>
#include <string>

#include "core/config_choices.h"
#include "core/launch_env.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/mpi_runtime.h"

namespace triax {

/// kMpi or kTcp: the configured backend, with auto resolved for this launch.
Backend resolve_backend(Backend configured, const LaunchEnv& launch);

class World {
 public:
  /// Brings up `backend` ("mpi" or "tcp"). Throws ConfigError when the launch cannot form it.
  World(Backend backend, const LaunchEnv& launch, int timeout_s, int* argc, char*** argv);

  std::shared_ptr<Communicator> communicator() const { return comm_; }
  Backend backend() const { return backend_; }

  /// Ends every process of the job: MPI_Abort, or for tcp this process's immediate exit (its
  /// peers' pending operations then fail on the closed connections, and torchrun stops the rest).
  [[noreturn]] void abort(int code) const;
  /// A rank of the job is gone for good (a dropped worker): end without MPI_Finalize (MpiRuntime).
  void leave_without_finalize() {
    if (mpi_) mpi_->leave_without_finalize();
  }

 private:
  Backend backend_;
  std::unique_ptr<MpiRuntime> mpi_;
  std::shared_ptr<Communicator> comm_;
};

}  // namespace triax
