// defines: triax::NcclCommunicator, triax::nccl_built
//
// The Communicator over NCCL, for CUDA tensors: gradients and activations move device to device.
// - Bootstrap: rank 0 of the group makes an ncclUniqueId and broadcasts it over a CPU
//   communicator that already spans the group (MPI or the TCP store's Gloo world); every rank
//   then joins with ncclCommInitRank. split() uses ncclCommSplit (NCCL >= 2.18).
// - Streams: operations run on this communicator's own stream, after the work already queued on
//   the stream that produced the tensor (an event orders them), so communication overlaps
//   compute; a Work's completion is a CUDA event recorded after the operation.
// - Waiting polls the event (and ncclCommGetAsyncError) with the same deadline as every other
//   wait (comm.timeout_s, Note [Watchdog]); a timeout aborts the communicator and names the
//   operation from the flight recorder.
// - Errors name the NCCL call, the rank and ncclGetErrorString (TRIAX_NCCL_CHECK).
// NCCL itself rejects two ranks on one device in one communicator ("Duplicate GPU detected"):
// a test with one GPU runs NCCL at world size 1 and the multi-rank paths over MPI.
// Built when CMake finds nccl.h and the CUDA runtime (TRIAX_NCCL); it needs no CUDA LibTorch to
// compile, only to run on tensors that live on a GPU.
#pragma once

#include <memory>

#include "parallel/comm/communicator.h"

namespace triax {

/// Whether this build has the NCCL backend (and so can honour comm.backend: nccl).
bool nccl_built();

/// An NCCL communicator over the ranks of `bootstrap` on CUDA device `device` (a collective over
/// `bootstrap`); throws ConfigError when this build has no NCCL.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device);

class NcclCommunicator : public Communicator {
 public:
  /// Joins an NCCL communicator over the ranks of `bootstrap` (a collective over it), on CUDA
  /// device `device`. Throws Error naming the NCCL call when it fails.
  static std::unique_ptr<NcclCommunicator> create(Communicator& bootstrap, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  std::string backend() const override { return "nccl"; }

  WorkPtr all_reduce_async(torch::Tensor tensor, ReduceOp op) override;
  WorkPtr all_gather_async(torch::Tensor output, torch::Tensor input) override;
  WorkPtr reduce_scatter_async(torch::Tensor output, torch::Tensor input, ReduceOp op) override;
  WorkPtr broadcast_async(torch::Tensor tensor, int root) override;
  WorkPtr isend(torch::Tensor tensor, int dst, int tag = 0) override;
  WorkPtr irecv(torch::Tensor tensor, int src, int tag = 0) override;
  WorkPtr all_to_all_async(torch::Tensor output, torch::Tensor input, int tag = 0) override;
  WorkPtr barrier_async() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  struct State;  ///< NCCL and CUDA handles (nccl_communicator.cpp)

 private:
  explicit NcclCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace triax
