// The NCCL backend when this build has no NCCL (CMake found no nccl.h or CUDA runtime): every
// use says how to get one, and nothing else changes.
#include "core/error.h"
#include "parallel/comm/nccl_communicator.h"

namespace triax {

bool nccl_built() {
  return false;
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int) {
  throw ConfigError(
      "comm.backend: nccl is not in this build (CMake found no nccl.h and CUDA runtime; "
      "valid: mpi, tcp; or rebuild with CUDA's NCCL, see docs/gpu.md)");
}

}  // namespace triax
