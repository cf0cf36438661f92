// defines: triax::MpiCommunicator
//
// The Communicator over an MPI communicator (MPICH), for CPU tensors.
//
// Note [Oversubscribed progress]: every operation, blocking or not, is posted as a non-blocking
// MPI call and completed by polling MPI_Testall with sched_yield() between polls. MPICH's own
// blocking calls spin without yielding; with more ranks than cores (8 ranks on a 2-core CI
// machine) a spinning rank holds the core its peer needs, and a small all-reduce at 4 ranks took
// 9 ms instead of 45 us (measured here). Yielding costs nothing when cores are not oversubscribed.
//
// Dtypes MPI cannot reduce (float16, bfloat16) are reduced in float32; counts above INT_MAX
// elements are split into several MPI calls.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

class MpiCommunicator : public Communicator {
 public:
  /// A duplicate of MPI_COMM_WORLD (MPI must be initialised).
  static std::unique_ptr<MpiCommunicator> world();
  /// A duplicate of MPI_COMM_SELF: a one-rank world, e.g. for a sequential reference run.
  static std::unique_ptr<MpiCommunicator> self();

  /// Takes ownership of `comm` (freed in the destructor).
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  MPI_Comm comm() const { return comm_; }

  WorkPtr all_reduce_async(torch::Tensor tensor, ReduceOp op) override;
  WorkPtr all_gather_async(torch::Tensor output, torch::Tensor input) override;
  WorkPtr reduce_scatter_async(torch::Tensor output, torch::Tensor input, ReduceOp op) override;
  WorkPtr broadcast_async(torch::Tensor tensor, int root) override;
  WorkPtr isend(torch::Tensor tensor, int dst, int tag = 0) override;
  WorkPtr irecv(torch::Tensor tensor, int src, int tag = 0) override;
  WorkPtr barrier_async() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  class GatherQueue;  // Note [Two-phase bf16 all-reduce] in the .cpp

 private:
  WorkPtr bf16_all_reduce(torch::Tensor tensor, ReduceOp op);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm gathers_ = MPI_COMM_NULL;  // the all-gathers of bf16 sums, dup'd on first use
  std::shared_ptr<GatherQueue> gather_queue_;
  int rank_ = 0;
  int size_ = 1;
};

/// The ranks `members` (ascending, of `parent`, an MpiCommunicator) as a communicator of their
/// own: collective over them alone (MPI_Comm_create_group), so ranks that are gone (a dropped
/// worker) take no part. `tag` tells concurrent creations apart. Throws Error for another backend.
std::unique_ptr<Communicator> mpi_subgroup(Communicator& parent, const std::vector<int>& members,
                                           int tag);

}  // namespace triax
