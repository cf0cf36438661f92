// defines: triax::pmi1_finalize
//
// Tells MPICH's process manager (hydra, behind mpirun/mpiexec) that this process has finished,
// the way MPI_Finalize ends: "cmd=finalize" on the PMI-1 socket hydra hands each process in
// PMI_FD, answered by "cmd=finalize_ack". Hydra treats a process whose PMI socket closes without
// it as crashed and kills the whole job (SIGKILL, "BAD TERMINATION ... EXIT CODE: 9"), so a rank
// that must leave without MPI_Finalize returning (see MpiRuntime's finalize deadline) says so
// here first.
#pragma once

#include <chrono>

namespace triax {

/// Sends the PMI-1 finalize on `fd` and waits up to `timeout` for the acknowledgement.
/// True when it came; false on a write error, a closed socket, other traffic or the timeout.
bool pmi1_finalize(int fd, std::chrono::milliseconds timeout);

}  // namespace triax
