// defines: triax::DdpOptions, triax::DistributedDataParallel
//
// Bucketed data-parallel gradient averaging that overlaps backward (PyTorch DDP's three ideas):
//  - Buckets: parameters are grouped, in reverse order of registration (roughly the order their
//    gradients are produced in backward), into contiguous buffers of about bucket_mb (the first
//    at most 1 MiB, as PyTorch); each parameter's .grad is a view into its bucket, so
//    accumulation writes straight into it.
//  - Progress: every hook also tests the in-flight buckets, because MPI advances a non-blocking
//    collective only inside MPI calls.
//  - Overlap: during the backward of the last micro-batch, as soon as every gradient of a bucket
//    is final, its all-reduce (average over dp) starts, non-blocking, while backward goes on.
//  - No sync on earlier micro-batches: they only accumulate.
// Finality is observed with tensor hooks (a stable LibTorch API): a hook fires just before its
// parameter's gradient is accumulated, and the engine finishes that accumulation before the next
// hook fires, so parameter i is final when the next hook (or finish()) runs.
// finish() launches what is left, waits for every bucket (the communication not hidden behind
// backward: exposed_seconds()), and reports by name any parameter that received no gradient in
// the step, or, with allow_unused, treats its gradient as zero.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/microbatch_tree.h"

namespace triax {

struct DdpOptions {
  double bucket_mb = 25.0;    ///< target bucket size in MiB
  bool allow_unused = false;  ///< a parameter without gradient counts as zero instead of an error
  /// ZeRO-1 (optimizer.shard): each bucket is padded to a multiple of dp, the parameters become
  /// views into one flat buffer per bucket (so a rank's shard of them is one slice), and finish()
  /// reduce-scatters each bucket into this rank's averaged shard instead of all-reducing it; the
  /// sharded optimizer (train/optim/sharded_adamw.h) updates the shard and all-gathers the
  /// parameters. All reduce-scatters start in finish(), after the caller has summed tied gradients.
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
};

class DistributedDataParallel : public GradientSync {
 public:
  /// `parameters`: this rank's parameters with their names (for messages).
  DistributedDataParallel(std::vector<std::pair<std::string, torch::Tensor>> parameters,
                          Communicator& dp, DdpOptions options = {});
  ~DistributedDataParallel() override;
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// Overwrites every parameter with dp-rank 0's (at start, so replicas begin equal).
  void broadcast_parameters() override;
  /// Zeroes all gradients (the bucket buffers) and re-attaches the .grad views.
  void zero_grad() override;
  /// Call before each micro-batch's backward: sync only on the last one.
  void set_sync(bool last_microbatch) override;
  /// After the last backward: launch the rest, wait for all buckets; gradients are averaged.
  void finish() override;
  /// A W pass completed these parameters' gradients: on the syncing micro-batch their buckets
  /// may start (the buckets of a split backward become ready as their last W runs).
  void gradients_ready(const std::vector<torch::Tensor>& params) override;
  void microbatch_starts(int microbatch) override;
  void microbatch_done(int microbatch, bool final) override;
  void add_gradient_holder(const torch::Tensor& holder) override;

  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  /// Bucket i's buffers and layout (shard mode).
  DdpBucketView bucket_view(int i) const;
  std::vector<DdpBucketView> bucket_views() const override;
  bool reduces_in_finish() const override { return options_.shard && !tree_; }
  size_t parameter_count() const override { return params_.size(); }
  /// Seconds finish() spent waiting for communication in the last step.
  double exposed_seconds() const override { return exposed_seconds_; }

 private:
  struct Bucket {
    torch::Tensor buffer;
    torch::Tensor params;          // shard mode: the flat parameters
    torch::Tensor grad_shard;      // shard mode: this rank's averaged slice
    torch::Tensor wire;            // reduce_dtype != the gradients' (dp > 1): the buffer as sent
    torch::Tensor wire_shard;      // ... and, in shard mode, the reduced slice as received
    std::vector<size_t> members;   // indices into params_
    std::vector<int64_t> offsets;  // each member's first element in the buffer
    int pending = 0;
    WorkPtr work;
  };
  void on_gradient(size_t index);
  void mark_final(size_t index);
  void launch(Bucket& bucket);
  Communicator& shards() const;  // the group a bucket's slices are dealt over (shard mode)
  bool narrowed() const;      // gradients cross the group in a narrower dtype than they accumulate
  void land(Bucket& bucket);  // after a narrowed bucket's reduction: widen and average it
  void reduce_tree();         // finish() of layout-invariant numerics
  std::vector<torch::Tensor> buffers() const;  // the buckets, then the holders' gradients

  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::unordered_map<const c10::TensorImpl*, size_t> index_of_;  // parameter -> its index
  std::vector<torch::Tensor> views_;
  std::vector<size_t> bucket_of_;
  std::vector<bool> seen_;
  std::vector<Bucket> buckets_;
  Communicator& dp_;
  DdpOptions options_;
  bool sync_ = true;
  bool have_pending_ = false;
  size_t pending_index_ = 0;
  double exposed_seconds_ = 0;
  std::unique_ptr<MicrobatchTree> tree_;  // layout-invariant numerics
  bool written_ = false;                  // a gradient reached the buckets since the last leaf
  std::map<int, std::vector<torch::Tensor>> partial_;  // a split backward's I part, until its W
  std::vector<torch::Tensor> holders_;                 // add_gradient_holder
  int held_ = -1;            // tree_pairs: the micro-batch the buckets hold, awaiting its partner
  bool root_ready_ = false;  // the buckets hold the tree's root
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace triax
