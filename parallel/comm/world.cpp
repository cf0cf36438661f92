#include "parallel/comm/world.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "parallel/comm/gloo_communicator.h"
#include "parallel/comm/mpi_communicator.h"

namespace triax {

Backend resolve_backend(Backend configured, const LaunchEnv& launch) {
  if (configured != Backend::kAuto) return configured;
  return launch.launcher == Launcher::kTorchrun ? Backend::kTcp : Backend::kMpi;
}

World::World(Backend backend, const LaunchEnv& launch, int timeout_s, int* argc, char*** argv)
    : backend_(backend) {
  if (backend_ == Backend::kTcp) {
    comm_ = GlooCommunicator::world(launch, timeout_s);
    return;
  }
  mpi_ = std::make_unique<MpiRuntime>(argc, argv);
  mpi_->check_matches(launch);
  comm_ = MpiCommunicator::world();
}

void World::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
  // The launcher forwards each rank's output through a pipe; tearing the job down at once can
  // outrun this rank's last lines (its error message). A moment lets them through.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (mpi_) MpiRuntime::abort(code);
  std::_Exit(code);
}

}  // namespace triax
