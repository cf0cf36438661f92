// defines: triax::Optimizer, triax::OptimizedParam, triax::NamedTensors, triax::StateStream,
//          triax::make_optimizer
//
// One optimizer object per run, whatever its kind (Megatron's MegatronOptimizer, torchtitan's
// OptimizersContainer): the trainer sets the learning rate, calls step(max_norm) once the
// gradients are final (train/finalize_grads.h), and saves or loads the state by checkpoint name.
// step() clips over the global gradient norm of the whole model — each parameter counted once
// (OptimizedParam::counted, from the layers' ParamTraits), summed over the model-parallel group —
// updates, and returns the norm before clipping.
// Two implementations:
//   ReplicatedOptimizer (replicated_optimizer.h): every dp rank holds the whole state; LibTorch's
//     SGD or our FusedAdamW underneath (the one file that knows LibTorch's state types);
//   ShardedAdamW (sharded_adamw.h): ZeRO-1, each dp rank holds 1/dp of AdamW's state, handed
//     DDP's bucket views through GradientSync::bucket_views().
// Checkpoint state is per parameter (`<param>.exp_avg`, `.exp_avg_sq`, `.step`; SGD's
// `.momentum`: checkpoint/state_name.h) whichever kind wrote it, so a run resumes sharded or not,
// at any dp.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/config.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/gradient_sync.h"

namespace triax {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// One parameter as the optimizer sees it.
struct OptimizedParam {
  std::string name;  ///< its checkpoint name (StateName::of_parameter)
  torch::Tensor tensor;
  bool counted = true;  ///< counts in the global norm on this rank (ParamTraits::counted)
};

/// A sharded optimizer's part of a checkpoint, streamed (checkpoint/checkpoint.h): for each
/// parameter, in the constructor's order, the tensors it hands over (meta tensors: a name, a
/// dtype and a shape; a ready one, such as the step, as it is), and the collective that hands
/// the meta ones to a sink one bucket at a time.
struct StateStream {
  std::vector<NamedTensors> by_parameter;
  std::function<void(const TensorSink&)> stream;  ///< empty: the optimizer streams nothing
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// The learning rate of the following steps (the LR schedule's value).
  virtual void set_learning_rate(double lr) = 0;
  /// After finalize_model_grads: global gradient norm over the model-parallel group (and dp for
  /// a sharded one), clipping to max_norm (<= 0: none), the update. Returns the norm.
  virtual double step(double max_norm) = 0;
  /// Each parameter's state by checkpoint name, in the constructor's parameter order (empty
  /// before the first step). Collective over dp for a sharded optimizer: call on every rank.
  virtual std::vector<NamedTensors> state_by_parameter() = 0;
  /// Restores state saved by any implementation (names checked; a parameter without state is
  /// left fresh, as before its first step). Throws naming a missing or foreign state.
  virtual void load_state(const std::map<std::string, torch::Tensor>& tensors) = 0;
  /// Bytes of optimizer state this rank holds (a master copy included).
  virtual int64_t state_bytes() const = 0;
  /// For a checkpoint without holding the state whole (ZeRO's sharded optimizer; the default
  /// streams nothing and state_by_parameter() serves): each parameter's state and, with
  /// `values`, its fp32 value (from the master slices, or the working weights' slices), gathered
  /// one bucket at a time over `over` (the ranks that split the state; nullptr: the optimizer's
  /// own group). `copy`: from copies of this rank's slices taken now (a background save's
  /// snapshot; the stream then runs on another thread, over a communicator of its own).
  virtual StateStream stream_state(bool values, bool copy, Communicator* over) {
    (void)values, (void)copy, (void)over;
    return {};
  }
  /// Layout-invariant numerics: step() takes the global norm from `norm` (OrderedGradNorm, over
  /// the whole reduced gradients) instead of summing its own squares.
  void set_norm_source(std::function<double()> norm) { norm_source_ = std::move(norm); }

 protected:
  std::function<double()> norm_source_;
};

/// The `train:`/`optimizer:` sections' optimizer over `params`. With optimizer.shard: ZeRO-1
/// over `dp`, fed by `syncs` (DDP in shard mode, one per chunk, whose constructors got the
/// parameters in this order, chunk after chunk).
std::unique_ptr<Optimizer> make_optimizer(const Config& config, std::vector<OptimizedParam> params,
                                          const std::vector<GradientSync*>& syncs, Communicator& dp,
                                          Communicator& model_parallel);

}  // namespace triax
