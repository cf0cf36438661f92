// defines: triax::GlooCommunicator
//
// The "tcp" backend: the Communicator over LibTorch's Gloo process group, which rendezvouses
// through a c10d TCP store. It exists for torchrun, under which MPICH cannot form a world
// (ENVIRONMENT.md): torchrun provides MASTER_ADDR/MASTER_PORT, RANK and WORLD_SIZE, and its agent
// already serves the store (TORCHELASTIC_USE_AGENT_STORE), so every rank joins it as a client
// under "/worker/attempt_<restart>"; without the agent store (hand-set variables) rank 0 hosts it.
// Everything of c10d stays in gloo_communicator.cpp: this header names none of it.
//
// What Gloo lacks is built from what it has: kAvg is a sum divided on completion, reduce-scatter
// an all-reduce whose own chunk is kept. split() all-gathers every rank's (color, key) and builds
// each group's process group on a store prefix unique to the parent, the split and the color.
#pragma once

#include <memory>

#include "core/launch_env.h"
#include "parallel/comm/communicator.h"

namespace triax {

class GlooCommunicator : public Communicator {
 public:
  /// The world of `launch` (torchrun or hand-set RANK/WORLD_SIZE/MASTER_*). Blocks until every
  /// rank has joined, at most `timeout_s`; throws Error naming the address and what to check.
  static std::unique_ptr<GlooCommunicator> world(const LaunchEnv& launch, int timeout_s);

  struct State;  // the c10d objects (gloo_communicator.cpp)
  explicit GlooCommunicator(std::shared_ptr<State> state);
  ~GlooCommunicator() override;

  int rank() const override;
  int size() const override;
  std::string backend() const override { return "tcp"; }

  WorkPtr all_reduce_async(torch::Tensor tensor, ReduceOp op) override;
  WorkPtr all_gather_async(torch::Tensor output, torch::Tensor input) override;
  WorkPtr reduce_scatter_async(torch::Tensor output, torch::Tensor input, ReduceOp op) override;
  WorkPtr broadcast_async(torch::Tensor tensor, int root) override;
  WorkPtr isend(torch::Tensor tensor, int dst, int tag = 0) override;
  WorkPtr irecv(torch::Tensor tensor, int src, int tag = 0) override;
  WorkPtr barrier_async() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace triax
