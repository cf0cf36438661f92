// The Gloo backend where this build's LibTorch ships no Gloo headers (PyTorch's pip wheels, the
// GPU machine's LibTorch: docs/gpu.md): every use says so, and the MPI backend is unchanged.
#include "core/error.h"
#include "parallel/comm/gloo_communicator.h"

namespace triax {
namespace {

[[noreturn]] void unavailable() {
  throw ConfigError(
      "comm.backend: tcp (Gloo, what torchrun launches use) is not in this build: its LibTorch "
      "ships no Gloo headers (gloo/*.h; PyTorch's pip wheels lack them). Valid here: "
      "comm.backend: mpi (mpirun, srun, or one process started directly)");
}

}  // namespace

struct GlooCommunicator::State {};

std::unique_ptr<GlooCommunicator> GlooCommunicator::world(const LaunchEnv&, int) {
  unavailable();
}
GlooCommunicator::GlooCommunicator(std::shared_ptr<State> state) : state_(std::move(state)) {}
GlooCommunicator::~GlooCommunicator() = default;
int GlooCommunicator::rank() const {
  unavailable();
}
int GlooCommunicator::size() const {
  unavailable();
}
WorkPtr GlooCommunicator::all_reduce_async(torch::Tensor, ReduceOp) {
  unavailable();
}
WorkPtr GlooCommunicator::all_gather_async(torch::Tensor, torch::Tensor) {
  unavailable();
}
WorkPtr GlooCommunicator::reduce_scatter_async(torch::Tensor, torch::Tensor, ReduceOp) {
  unavailable();
}
WorkPtr GlooCommunicator::broadcast_async(torch::Tensor, int) {
  unavailable();
}
WorkPtr GlooCommunicator::isend(torch::Tensor, int, int) {
  unavailable();
}
WorkPtr GlooCommunicator::irecv(torch::Tensor, int, int) {
  unavailable();
}
WorkPtr GlooCommunicator::barrier_async() {
  unavailable();
}
std::unique_ptr<Communicator> GlooCommunicator::split(int, int) {
  unavailable();
}

}  // namespace triax
