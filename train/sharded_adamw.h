// defines: triax::ShardedAdamW
//
// ZeRO stage 1 (Megatron's distributed optimizer) for AdamW: DDP in shard mode
// (parallel/dp/distributed_data_parallel.h) lays each bucket's parameters out in one flat buffer
// and reduce-scatters the bucket's gradients, so dp rank r holds the averaged gradient of slice r
// of every bucket. This optimizer keeps AdamW's two moments for that slice only (8/dp bytes per
// parameter instead of 8), updates the slice with the same fused formula as FusedAdamW, and
// all-gathers each bucket's parameters so every replica holds the whole model again.
// Clipping stays global and exact: each rank sums the squares of the counted elements of its
// slices (a parameter's elements count where the unsharded norm counts them: grad_norm.h), and
// the sum is all-reduced over dp and then over the model-parallel group.
// Checkpoints keep the unsharded per-parameter format: export_state() all-gathers the moments into
// LibTorch AdamW state objects, import_state() takes this rank's slices from them, so a run
// resumes at any dp, with or without sharding.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "core/config.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/distributed_data_parallel.h"

namespace triax {

class ShardedAdamW {
 public:
  /// `ddps[i]` syncs the parameters params[first_index[i] ...] (in its constructor's order);
  /// `counted[k]`: parameter k counts in the global norm. Both communicators are this rank's.
  ShardedAdamW(const std::vector<DistributedDataParallel*>& ddps,
               const std::vector<size_t>& first_index, const std::vector<torch::Tensor>& params,
               const std::vector<bool>& counted, const TrainConfig& train, Communicator& dp,
               Communicator& model_parallel);

  void set_learning_rate(double lr) { lr_ = lr; }
  /// After every DDP's finish(): global gradient norm, clipping to max_norm (0 = none), the
  /// update of this rank's slices, and the parameters' all-gather. Returns the norm.
  double clip_and_step(double max_norm);
  /// Collective over dp: every parameter's full exp_avg, exp_avg_sq and step, as LibTorch state.
  void export_state(torch::optim::Optimizer& full) const;
  /// This rank's slices of `full`'s state (any dp wrote it); then clears `full`'s state.
  void import_state(torch::optim::Optimizer& full);
  /// Bytes of optimizer state this rank holds.
  int64_t state_bytes() const;

 private:
  struct Segment {
    int64_t begin, end;    // in the shard
    size_t param;          // index into params_
    int64_t param_offset;  // of `begin` within the parameter's elements
    bool decays, counted;
  };
  struct Part {
    DdpBucketView view;
    torch::Tensor exp_avg, exp_avg_sq;
    std::vector<Segment> segments;
    std::vector<size_t> indices;  // each member's index into params_
  };
  std::vector<Part> parts_;
  std::vector<torch::Tensor> params_;
  TrainConfig train_;
  Communicator& dp_;
  Communicator& model_parallel_;
  double lr_;
  int64_t step_ = 0;
};

}  // namespace triax
