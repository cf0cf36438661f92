// The world communicator of a multi-rank test: MPI's under mpiexec, or, with
// TRIAX_TEST_BACKEND=tcp, the Gloo one over torchrun's TCP store. So the same test cases check
// both backends: CTest runs them under mpiexec and under a real torchrun.
#pragma once

#include <memory>

#include "parallel/comm/communicator.h"

namespace triax::testing {

/// A fresh communicator over all ranks (a collective: every rank calls it).
std::unique_ptr<Communicator> test_world();

}  // namespace triax::testing
