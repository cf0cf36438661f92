// defines: triax::MpiRuntime, triax::launch_mismatch
//
// Owns MPI_Init/MPI_Finalize for a process, and checks that MPI formed the world the launcher
// announced. MPICH under torchrun, or under `srun --mpi=none|pmix`, comes up as N separate
// one-rank worlds; training would then silently run N independent copies. We stop instead, with
// the command that works.
#pragma once

#include <string>

#include "core/launch_env.h"

namespace triax {

/// "" when MPI's world (mpi_rank of mpi_size) is what `launch` announced; else the message that
/// explains the mismatch and how to launch instead.
std::string launch_mismatch(const LaunchEnv& launch, int mpi_rank, int mpi_size);

class MpiRuntime {
 public:
  /// Initialises MPI (thread level MULTIPLE requested) unless already initialised.
  MpiRuntime(int* argc, char*** argv);
  /// Finalises MPI if this object initialised it.
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }
  /// Throws ConfigError when MPI's world is not the launcher's (see launch_mismatch).
  void check_matches(const LaunchEnv& launch) const;

  /// Ends every process of the job at once (after an error on one rank, peers may be waiting
  /// in a collective that can never complete).
  [[noreturn]] static void abort(int code);
  /// A rank of the job is gone (a dropped worker): MPI_Finalize would wait for it in its PMI
  /// barrier forever. The destructor then only tells hydra this rank has finished.
  void leave_without_finalize() { leave_ = true; }

 private:
  bool owns_ = false;
  bool leave_ = false;
  int rank_ = 0;
  int size_ = 1;
  int hydra_pmi_fd_ = -1;  ///< hydra's PMI-1 socket (PMI_FD) when mpirun started us, else -1
};

}  // namespace triax
