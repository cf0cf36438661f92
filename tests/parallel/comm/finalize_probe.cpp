// A job whose MPI_Finalize cannot return on some ranks, to check that the run still ends as a
// success under mpirun. Rank 0 stands for a peer that finished its finalize and left: it tells
// hydra so (as MPI_Finalize does) and exits without disconnecting. The other ranks' MPI_Finalize
// then waits forever on the disconnect from rank 0 (with MPIR_CVAR_NO_COLLECTIVE_FINALIZE=1 set
// by the test, so that the PMI barrier before it does not wait for rank 0 instead) — the hang
// seen between nodes — and MpiRuntime's finalize deadline must end them with status 0 and
// without hydra killing the job. The last rank starts its finalize a few seconds late, so that
// it is still running when the others reach their deadline and leave: hydra kills what is left
// of a job when a process leaves without telling it.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "parallel/comm/mpi_runtime.h"
#include "parallel/comm/pmi_finalize.h"

int main(int argc, char** argv) {
  triax::MpiRuntime mpi(&argc, &argv);
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpi.world_rank() == 0) {
    const char* fd = std::getenv("PMI_FD");
    if (fd == nullptr || !triax::pmi1_finalize(std::atoi(fd), std::chrono::seconds(3))) {
      std::fprintf(stderr, "finalize_probe: rank 0 got no PMI finalize acknowledgement\n");
      std::_Exit(3);
    }
    std::_Exit(0);
  }
  if (mpi.world_rank() == mpi.world_size() - 1)
    std::this_thread::sleep_for(std::chrono::seconds(4));
  return 0;
}
