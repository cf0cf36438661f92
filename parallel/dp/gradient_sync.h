// defines: triax::DdpBucketView, triax::DdpOptions, triax::GradientSync,
//          triax::PerParameterAverage, triax::average_gradients, triax::make_gradient_sync
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

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/gradient_push.h"
#include "parallel/dp/parameter_gate.h"

namespace triax {

/// One bucket as the sharded optimizer sees it.
struct DdpBucketView {
  torch::Tensor params;      ///< the flat parameter buffer [dp * shard_size] (shard mode)
  torch::Tensor grad_shard;  ///< this rank's averaged gradient slice [shard_size] after finish()
  /// ZeRO-3: this rank's slice of the parameters [shard_size], the only lasting copy (`params`
  /// is whole only while its unit is gathered); the optimizer updates it. Else undefined.
  torch::Tensor param_shard;
  int64_t shard_begin = 0;  ///< where this rank's slice starts in the flat buffer
  int64_t shard_size = 0;
  struct Member {
    size_t index;    ///< position in the parameters given to the constructor
    int64_t offset;  ///< in the flat buffer
    int64_t numel;
  };
  std::vector<Member> members;
};

/// The choices of DistributedDataParallel (distributed_data_parallel.h) beyond its parameters.
struct DdpOptions {
  double bucket_mb = 25.0;    ///< target bucket size in MiB
  bool allow_unused = false;  ///< a parameter without gradient counts as zero instead of an error
  /// ZeRO-1 (ddp.shard: optimizer): each bucket is padded to a multiple of dp, the parameters
  /// become views into one flat buffer per bucket (so a rank's shard of them is one slice), and
  /// each bucket is reduce-scattered into this rank's averaged shard instead of all-reduced (during
  /// the last micro-batch's backward, as the all-reduce); the sharded optimizer
  /// (train/optim/sharded_adamw.h) updates the shard and all-gathers the parameters.
  bool shard = false;
  /// The dtype gradients cross the dp group in (ddp.reduce_dtype). kBFloat16 halves the bytes:
  /// each bucket is rounded into a bf16 copy, summed in bf16 (Communicator semantics: pairwise,
  /// as NCCL), then widened back into the fp32 bucket and divided by dp there. Gradients still
  /// accumulate across micro-batches in the parameters' dtype.
  torch::ScalarType reduce_dtype = torch::kFloat;
  /// Layout-invariant numerics (Note [Micro-batch tree]) when > 0: the micro-batches of a step on
  /// this rank (a power of two when dp > 1). Nothing is reduced during backward: after each
  /// micro-batch's backward its gradients leave the buckets for a MicrobatchTree, and finish()
  /// reduces the tree's root over dp with tree_all_reduce and divides by the global micro-batch
  /// count (the losses backpropagate unscaled). fp32 buckets only.
  int tree_leaves = 0;
  /// With tree_leaves: the schedule runs each micro-batch's backward as one B (no split), so
  /// autograd may add micro-batch 2j + 1 onto 2j in the buckets — their node of the tree, exactly —
  /// saving a copy per pair (a pair broken by another micro-batch's backward is taken apart).
  bool tree_pairs = false;
  /// Hybrid sharding (optimizer.shard_group), shard mode only: the buckets are padded to and
  /// reduce-scattered over `shard_group` (consecutive dp ranks) instead of the whole dp group, and
  /// each slice is then all-reduced over `replica_group` (the ranks holding the same slice in the
  /// other groups): every rank holds the dp-averaged gradient of its 1/|shard_group| slice. The
  /// broadcast and the layout-invariant tree stay on the whole dp group. Null: no hybrid.
  Communicator* shard_group = nullptr;
  Communicator* replica_group = nullptr;
  /// With allow_unused every rank must leave the same parameters without gradient (as for the
  /// unsharded buckets): ZeRO-2 sends a bucket when its last used parameter is final.
  /// ZeRO-2 (ddp.shard: gradients), shard mode only: no bucket holds gradients between
  /// micro-batches. Autograd accumulates each parameter's gradient in its own .grad; as soon as a
  /// bucket's are all final — on every micro-batch, overlapped with backward — they are packed
  /// into a buffer that is reduce-scattered (and, hybrid, its slice all-reduced across the
  /// groups) and the .grads are released; the buffer is freed when the reduce-scatter lands and
  /// the slice is added into this rank's fp32 gradient shard. Between backwards the parameters
  /// have no .grad. Ignored under layout-invariant numerics (the tree needs whole gradients:
  /// ZeRO-1 there, bit for bit).
  bool shard_gradients = false;
  /// Parameters that get a bucket of their own (the tied embedding's copies, shard mode): two
  /// ranks' buckets of one such tensor are padded alike, so their slices cover the same elements
  /// and the tied sum can run on the slices.
  std::vector<torch::Tensor> alone;
  /// The model's units (parameter_gate.h): units[k] is parameter k's, and a bucket never spans
  /// two (empty: buckets by size only). ZeRO-3 needs them; ddp.unit_buckets gives them to the
  /// other levels, which then lay their buckets out alike and reduce the same sums.
  std::vector<int> units;
  /// ZeRO-3 (ddp.shard: parameters), with units, shard and shard_gradients: between uses a rank
  /// keeps only its slice of each bucket's parameters; the model's ParameterGate calls gather a
  /// unit (all-gather over the shard group, the next unit prefetched) and free it.
  bool shard_parameters = false;
  /// ZeRO-3: free a unit after its forward (true) or keep it until its backward
  /// (ddp.reshard_after_forward); free it after its backward (true) or keep it until the step
  /// ends (ddp.reshard_after_backward: false, both false: one gather per step).
  bool reshard_after_forward = true;
  bool reshard_after_backward = true;
  /// ZeRO-3: the schedule splits backward into I and W passes (ZB-H1, ZB-V). A W pass reads
  /// weights (a norm's weight gradient does), so a unit stays whole from its micro-batch's I
  /// pass until that micro-batch's last backward action on the chunk (microbatch_done).
  bool split_backward = false;
  /// bf16 working weights (train.param_dtype: bf16), shard mode only: the parameters are rounded
  /// into bf16 flat buffers (what the model computes with, what ZeRO-3 gathers), while gradients
  /// stay in the parameters' original dtype (fp32): a hook adds each incoming bf16 gradient into
  /// an fp32 main gradient (the bucket's buffer, or under ZeRO-2/3 one per parameter until its
  /// bucket takes off), so micro-batches accumulate in fp32, as Megatron's main_grad. The fp32
  /// master copy lives in the optimizer's slice (ShardedAdamW), which writes the bf16 weights.
  torch::ScalarType param_dtype = torch::kFloat;
  /// Parameter servers (ddp.mode: parameter_server), unsharded buckets only: each bucket leaves
  /// through `push` (as chunk `push_chunk`'s) instead of being all-reduced, unreduced — the
  /// step's sum on this rank (its last micro-batch's backward launches it, as the all-reduce), or
  /// under layout-invariant numerics the micro-batch tree's root, then the gradient holders' —
  /// and the servers average it. The gradients left here after finish() are this rank's own.
  GradientPush* push = nullptr;
  int push_chunk = 0;
  /// A bucket never spans two groups: parameter k's is bucket_groups[k] (empty: no groups). The
  /// parameter servers' shards, so that each bucket goes to one server.
  std::vector<int> bucket_groups;
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
  /// Every bucket's flat buffers and layout, for a sharded optimizer (empty unless shard mode).
  virtual std::vector<DdpBucketView> bucket_views() const { return {}; }
  /// Bytes of gradient memory this sync holds now (buckets, slices, what is in flight), and the
  /// most it held since zero_grad(); 0 where it does not count (the per-parameter baseline).
  virtual int64_t gradient_bytes() const { return 0; }
  virtual int64_t peak_gradient_bytes() const { return gradient_bytes(); }
  /// True when finish() leaves the reduced gradient as this rank's slices (ZeRO-1 and ZeRO-2):
  /// the fix-ups after it (train/finalize_grads.h) act on gradient_shard() instead of .grad.
  virtual bool reduces_to_slices() const { return false; }
  /// With reduces_to_slices(): the part of this rank's gradient slice that belongs to `param`
  /// (flat, possibly empty); undefined when `param` is not one of this sync's.
  virtual torch::Tensor gradient_shard(const torch::Tensor& /*param*/) const { return {}; }
  /// ZeRO-3: the gate the model calls around each unit (null at every other level).
  virtual ParameterGate* parameter_gate() { return nullptr; }
  /// Runs `use` with every parameter whole (ZeRO-3 gathers them first and, after, takes each
  /// rank's slice again from what `use` left, so a load lands in the slices, then frees them).
  virtual void with_whole_parameters(const std::function<void()>& use) { use(); }
  /// Bytes of parameters this rank holds now (ZeRO-3: slices and gathered units) and the most
  /// since zero_grad(); 0 where parameters are simply whole (the model's own bytes).
  virtual int64_t parameter_bytes() const { return 0; }
  virtual int64_t peak_parameter_bytes() const { return parameter_bytes(); }
  /// ZeRO-3: seconds this step's forward and backward waited for all-gathers (not prefetched).
  virtual double gather_wait_seconds() const { return 0; }
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

/// The `ddp:` section's choice over `parameters` (named, for messages): bucketed DDP with
/// `options` (its bucket_mb and allow_unused taken from `ddp`), or the per-parameter baseline.
std::unique_ptr<GradientSync> make_gradient_sync(
    std::vector<std::pair<std::string, torch::Tensor>> parameters, Communicator& dp,
    const DdpConfig& ddp, DdpOptions options);

}  // namespace triax
