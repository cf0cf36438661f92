// The one Catch2 main of triax's tests: MPI is initialised once for the whole run, so the same
// binary serves single-process tests and the multi-rank ones CTest starts under `mpiexec -n K`.
// Every rank runs the same test cases in the same order, so their collectives match.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mpi.h>

#include <torch/torch.h>
#include "core/compute_threads.h"
#include "core/log.h"
#include "core/strings.h"
#include "parallel/comm/mpi_runtime.h"

int main(int argc, char** argv) {
  triax::MpiRuntime mpi(&argc, &argv);
  triax::log::set_prefix(triax::str("[test rank ", mpi.world_rank(), "]"));
  triax::log::set_is_root(mpi.world_rank() == 0);
  triax::set_compute_threads(1);  // tests run many ranks on few cores
  const int code = Catch::Session().run(argc, argv);
  // A rank that failed must fail the whole mpiexec run, even if rank 0 passed.
  int worst = code;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
