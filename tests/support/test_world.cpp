#include "support/test_world.h"

#include <cstdlib>
#include <string>

#include "core/launch_env.h"
#include "parallel/comm/gloo_communicator.h"
#include "parallel/comm/mpi_communicator.h"

namespace triax::testing {

std::unique_ptr<Communicator> test_world() {
  const char* backend = std::getenv("TRIAX_TEST_BACKEND");
  if (backend == nullptr || std::string(backend) != "tcp") return MpiCommunicator::world();
  // One rendezvous per process; each test gets its own group split from it, as MPI's world()
  // gives each a duplicate of MPI_COMM_WORLD.
  static std::unique_ptr<GlooCommunicator> base =
      GlooCommunicator::world(detect_launch(process_env()), 60);
  return base->split(0, base->rank());
}

}  // namespace triax::testing
