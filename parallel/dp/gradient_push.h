// defines: triax::GradientPush
//
// Where data-parallel gradients go instead of an all-reduce when parameter servers hold the
// parameters (ddp.mode: parameter_server): DistributedDataParallel hands each bucket, once its
// gradients are final for the step, to a GradientPush, which sends it to its server
// (parallel/ps/server_client.h) without reducing it.
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"

namespace triax {

class GradientPush {
 public:
  virtual ~GradientPush() = default;
  /// Sends this rank's gradients of chunk `chunk`'s buffer `index` (its DDP buckets in order,
  /// then its gradient holders) for the current step. Non-blocking: the work completes when
  /// `buffer` may be written again.
  virtual WorkPtr push(int chunk, int index, const torch::Tensor& buffer) = 0;
};

}  // namespace triax
