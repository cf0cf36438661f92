// defines: triax::CountingCommunicator, triax::CommCounts
//
// A Communicator that forwards every operation to another one and counts calls and payload
// bytes per kind, so benchmarks can set measured traffic beside the theoretical volume.
#pragma once

#include <cstdint>

#include "parallel/comm/communicator.h"

namespace triax {

struct CommCounts {
  int64_t all_reduce_calls = 0, all_reduce_bytes = 0;
  int64_t all_gather_calls = 0, all_gather_bytes = 0;          ///< bytes this rank contributes
  int64_t reduce_scatter_calls = 0, reduce_scatter_bytes = 0;  ///< bytes of the input
  int64_t broadcast_calls = 0, broadcast_bytes = 0;
  int64_t send_bytes = 0, recv_bytes = 0;
  int64_t all_to_all_calls = 0, all_to_all_bytes = 0;  ///< bytes sent to the other ranks
};

class CountingCommunicator : public Communicator {
 public:
  /// `inner` must outlive this object.
  explicit CountingCommunicator(Communicator& inner) : inner_(inner) {}

  const CommCounts& counts() const { return counts_; }
  void reset() { counts_ = CommCounts{}; }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend() + "+counting"; }

  WorkPtr all_reduce_async(torch::Tensor tensor, ReduceOp op) override;
  WorkPtr all_gather_async(torch::Tensor output, torch::Tensor input) override;
  WorkPtr reduce_scatter_async(torch::Tensor output, torch::Tensor input, ReduceOp op) override;
  WorkPtr broadcast_async(torch::Tensor tensor, int root) override;
  WorkPtr isend(torch::Tensor tensor, int dst, int tag = 0) override;
  WorkPtr irecv(torch::Tensor tensor, int src, int tag = 0) override;
  WorkPtr barrier_async() override { return inner_.barrier_async(); }
  WorkPtr all_to_all_async(torch::Tensor output, torch::Tensor input, int tag = 0) override;
  /// The sub-communicator is not counted.
  std::unique_ptr<Communicator> split(int color, int key) override {
    return inner_.split(color, key);
  }

 private:
  Communicator& inner_;
  CommCounts counts_;
};

}  // namespace triax
