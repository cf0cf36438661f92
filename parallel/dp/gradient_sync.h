// defines: triax::DdpBucketView, triax::GradientSync, triax::PerParameterAverage,
// triax::average_gradients,
//          triax::make_gradient_sync
//
// Data parallelism as one interface for every model: replicas start equal (parameters
// broadcast from dp-rank 0) and stay equal (each rank applies the gradient averaged over the dp
// group). A trainer calls, per step:
//   zero_grad();  for each micro-batch { set_sync(is_last); backward; }  finish();
// Two implementations:
//   DistributedDataParallel (dp/distributed_data_parallel.h): buckets, all-reduced during the
//     last micro-batch's backward — what training uses;
//   PerParameterAverage (here): after backward, one all-reduce per parameter, all in flight at
//     once — the simple baseline the DDP benchmark compares against (`ddp.bucketed: false`).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "parallel/comm/communicator.h"

namespace triax {

/// One bucket as the sharded optimizer sees it.
struct DdpBucketView {
  torch::Tensor params;      ///< the flat parameter buffer [dp * shard_size] (shard mode)
  torch::Tensor grad_shard;  ///< this rank's averaged gradient slice [shard_size] after finish()
  int64_t shard_begin = 0;   ///< where this rank's slice starts in the flat buffer
  int64_t shard_size = 0;
  struct Member {
    size_t index;    ///< position in the parameters given to the constructor
    int64_t offset;  ///< in the flat buffer
    int64_t numel;
  };
  std::vector<Member> members;
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  /// Overwrites every parameter with dp-rank 0's (at start, so replicas begin equal).
  virtual void broadcast_parameters() = 0;
  /// Zeroes all gradients before a step's first backward.
  virtual void zero_grad() = 0;
  /// Before each micro-batch's backward: whether it is the step's last (the one to sync on).
  virtual void set_sync(bool last_microbatch) = 0;
  /// After the last backward: every gradient is the dp average when this returns.
  virtual void finish() = 0;
  /// A split backward's W added to these parameters' .grad itself (no hook sees it): on the
  /// micro-batch that syncs, they are final now.
  virtual void gradients_ready(const std::vector<torch::Tensor>& /*params*/) {}
  /// After a backward action of `microbatch` that may have added gradients (StageFunctions::
  /// after_backward); `final` on its last. Layout-invariant numerics take the micro-batch's
  /// gradients out here; otherwise nothing.
  virtual void microbatch_done(int /*microbatch*/, bool /*final*/) {}
  /// Before each backward action of `microbatch` (StageFunctions::before_backward).
  virtual void microbatch_starts(int /*microbatch*/) {}
  /// Layout-invariant numerics: a leaf outside the parameters (a tied head's alias,
  /// ModelChunk::tied_head_alias) whose .grad is summed over micro-batches and dp like theirs.
  virtual void add_gradient_holder(const torch::Tensor& /*holder*/) {
    throw std::logic_error("this gradient sync sums no gradient holders");
  }
  /// Seconds finish() waited for communication in the last step (not hidden behind backward).
  virtual double exposed_seconds() const = 0;
  /// Parameters given to the constructor.
  virtual size_t parameter_count() const = 0;
  /// True when finish() starts the reduction itself (ZeRO-1's reduce-scatter), so fix-ups that
  /// sum gradients across ranks go before it; false when the reduction already ran during
  /// backward, so they go after (train/finalize_grads.h).
  virtual bool reduces_in_finish() const { return false; }
  /// Every bucket's flat buffers and layout, for a sharded optimizer (empty unless shard mode).
  virtual std::vector<DdpBucketView> bucket_views() const { return {}; }
};

class PerParameterAverage : public GradientSync {
 public:
  PerParameterAverage(std::vector<std::pair<std::string, torch::Tensor>> parameters,
                      Communicator& dp);
  void broadcast_parameters() override;
  void zero_grad() override;
  void set_sync(bool) override {}
  void finish() override;
  double exposed_seconds() const override { return exposed_seconds_; }
  size_t parameter_count() const override { return params_.size(); }

 private:
  std::vector<torch::Tensor> params_;
  Communicator& dp_;
  double exposed_seconds_ = 0;
};

/// Averages every parameter's gradient over `dp`. A parameter without a gradient gets a zero
/// one first, so every rank issues the same collectives (a mismatch would hang).
void average_gradients(const std::vector<torch::Tensor>& parameters, Communicator& dp);

/// The `ddp:` section's choice over `parameters` (named, for messages); `wire`: the dtype
/// gradients cross `dp` in (MixedPrecision::wire_dtype); `shard`: bucketed DDP in ZeRO-1 mode
/// (optimizer.shard: see DdpOptions::shard); `tree_leaves` > 0: layout-invariant numerics over
/// that many micro-batches per step, `tree_pairs` when no backward is split
/// (DdpOptions::tree_leaves, tree_pairs); `shard_group` and `replica_group`: hybrid sharding
/// (DdpOptions::shard_group, replica_group).
std::unique_ptr<GradientSync> make_gradient_sync(
    std::vector<std::pair<std::string, torch::Tensor>> parameters, Communicator& dp,
    const DdpConfig& ddp, torch::ScalarType wire, bool shard = false, int tree_leaves = 0,
    bool tree_pairs = false, Communicator* shard_group = nullptr,
    Communicator* replica_group = nullptr);

}  // namespace triax
