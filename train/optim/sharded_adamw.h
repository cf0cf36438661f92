// defines: triax::ShardedAdamW
//
// ZeRO stage 1 (Megatron's distributed optimizer) for AdamW: DDP in shard mode
// (parallel/dp/distributed_data_parallel.h) lays each bucket's parameters out in one flat buffer
// and reduce-scatters the bucket's gradients, so dp rank r holds the averaged gradient of slice r
// of every bucket. This optimizer keeps AdamW's two moments for that slice only (8/dp bytes per
// parameter instead of 8), updates the slice with the same fused formula as FusedAdamW, and
// all-gathers each bucket's parameters so every replica holds the whole model again (ZeRO-3:
// it updates the slice of the parameters that is all a rank keeps; the next forward gathers it).
// Clipping stays global and exact: each rank sums the squares of the counted elements of its
// slices (a parameter's elements count where the unsharded norm counts them: grad_norm.h), and
// the sum is all-reduced over dp and then over the model-parallel group.
// Checkpoints keep the unsharded per-parameter format: a save streams the moments (and the
// values, where a rank holds only slices of them) one bucket at a time (stream_state), so no rank
// holds them whole; load_state() takes this rank's slices, so a run resumes at any dp, with or
// without sharding.
// bf16 working weights (train.param_dtype: bf16: DDP's flat parameters are bf16): the fp32
// master copy of this rank's slice lives here beside the moments (12/dp bytes per parameter), is
// what AdamW updates, and is rounded (to nearest even) into the bf16 slice that is all-gathered
// (ZeRO-1/2) or kept (ZeRO-3); checkpoints save the master (streamed: stream_state), so a bf16 run
// resumes in fp32 and back with no rounding of the saved values.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "core/config.h"
#include "parallel/comm/communicator.h"
#include "train/optim/optimizer.h"

namespace triax {

class ShardedAdamW : public Optimizer {
 public:
  /// `syncs[i]` syncs the parameters params[first ...] in its constructor's order, chunk after
  /// chunk; each must be DDP in shard mode (it hands over its bucket views).
  ShardedAdamW(const TrainConfig& train, std::vector<OptimizedParam> params,
               const std::vector<GradientSync*>& syncs, Communicator& dp,
               Communicator& model_parallel);

  void set_learning_rate(double lr) override { lr_ = lr; }
  /// After every sync's finish(): global gradient norm, clipping to max_norm (0 = none), the
  /// update of this rank's slices, and the parameters' all-gather. Returns the norm.
  double step(double max_norm) override;
  /// Collective over dp: every parameter's full exp_avg, exp_avg_sq and step.
  std::vector<NamedTensors> state_by_parameter() override;
  /// This rank's slices of the saved state (any dp wrote it).
  void load_state(const std::map<std::string, torch::Tensor>& tensors) override;
  int64_t state_bytes() const override;
  StateStream stream_state(bool values, bool copy, Communicator* over) override;

 private:
  /// The norm from this rank's slices, summed over dp and the model-parallel group.
  double global_norm();
  struct Segment {
    int64_t begin, end;    // in the shard
    size_t param;          // index into params_
    int64_t param_offset;  // of `begin` within the parameter's elements
    bool decays, counted;
  };
  struct Part {
    DdpBucketView view;
    torch::Tensor exp_avg, exp_avg_sq;
    torch::Tensor master;  // bf16 working weights: the fp32 slice AdamW updates (else undefined)
    std::vector<Segment> segments;
    std::vector<size_t> indices;  // each member's index into params_
  };
  std::vector<Part> parts_;
  std::vector<OptimizedParam> params_;
  TrainConfig train_;
  Communicator& dp_;
  Communicator& model_parallel_;
  double lr_;
  int64_t step_ = 0;
};

}  // namespace triax
