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
// ZeRO-2 (DdpOptions::shard_gradients) reuses the same finality on every micro-batch: the
// parameters accumulate into their own .grad (autograd takes the incoming tensor: no zeroed
// buffer), and when a bucket's are all final they are packed into a buffer that is
// reduce-scattered (a "flight") and released, so a rank holds its fp32 gradient slice, the
// gradients of the buckets not yet complete, and the flights in the air.
// ZeRO-3 (DdpOptions::units) adds the parameters: each bucket's flat parameters are freed (its
// storage emptied in place, so every view of it, autograd's saved ones included, sees the data
// again once it is refilled) and only this rank's slice (param_shard) lasts; the model gates
// each unit (ParameterGate): an all-gather of its buckets before its forward and, by a hook on
// its output, before its backward, with the next unit's all-gather started beside the compute.
// A unit is freed when its buckets' flights have all taken off (its backward is done) and at
// finish(), before the optimizer updates the slices.
// bf16 working weights (DdpOptions::param_dtype) live in bf16 flat buffers; a gradient arriving
// for one is added, in its hook, into an fp32 main gradient (the bucket's buffer, or ZeRO-2/3's
// per-parameter main_) before autograd stores it in the bf16 .grad, which is dropped unread once
// its accumulation is over (the next hook, or the end of the backward action): micro-batches and
// a W pass's gradients add up in fp32 whatever the weights' dtype.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/microbatch_tree.h"

namespace triax {

class DistributedDataParallel : public GradientSync, public ParameterGate {
 public:
  /// `parameters`: this rank's parameters with their names (for messages).
  DistributedDataParallel(std::vector<std::pair<std::string, torch::Tensor>> parameters,
                          Communicator& dp, DdpOptions options = {});
  ~DistributedDataParallel() override;
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// Overwrites every parameter with dp-rank 0's (at start, so replicas begin equal).
  void broadcast_parameters() override;
  /// Zeroes all gradients (the bucket buffers) and re-attaches the .grad views (ZeRO-2: leaves
  /// every .grad undefined and zeroes the slices).
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
  bool reduces_to_slices() const override { return options_.shard && !tree_; }
  torch::Tensor gradient_shard(const torch::Tensor& param) const override;
  int64_t gradient_bytes() const override;
  int64_t peak_gradient_bytes() const override { return std::max(peak_bytes_, gradient_bytes()); }
  size_t parameter_count() const override { return params_.size(); }
  /// Seconds finish() spent waiting for communication in the last step.
  double exposed_seconds() const override { return exposed_seconds_; }

  // ZeRO-3.
  ParameterGate* parameter_gate() override { return units_.empty() ? nullptr : this; }
  void enter(int unit, int prefetch) override;
  void leave(int unit, const torch::Tensor& output, int prefetch) override;
  void progress() override;
  void with_whole_parameters(const std::function<void()>& use) override;
  int64_t parameter_bytes() const override;
  int64_t peak_parameter_bytes() const override {
    return std::max(peak_param_bytes_, parameter_bytes());
  }
  double gather_wait_seconds() const override { return gather_wait_; }

 private:
  struct Bucket {
    torch::Tensor buffer;
    torch::Tensor params;          // shard mode: the flat parameters
    torch::Tensor param_shard;     // ZeRO-3: this rank's slice of them, the lasting copy
    torch::Tensor grad_shard;      // shard mode: this rank's averaged slice
    torch::Tensor wire;            // reduce_dtype != the gradients' (dp > 1): the buffer as sent
    torch::Tensor wire_shard;      // ... and, in shard mode, the reduced slice as received
    std::vector<size_t> members;   // indices into params_
    std::vector<int64_t> offsets;  // each member's first element in the buffer
    int pending = 0;
    WorkPtr work;
    int64_t numel = 0;     // the buffer's (padded) length
    int launches = 0;      // ZeRO-2: flights this step
    bool filling = false;  // ZeRO-2: a member has a gradient not yet sent
  };
  // ZeRO-2: one reduce-scatter of a bucket's buffer, from launch until its slice is added.
  struct Flight {
    size_t bucket;
    torch::Tensor buffer;  // what is sent (the bucket's buffer, or its bf16 copy); freed on landing
    torch::Tensor slice;   // what arrives: this rank's slice of the sum or average
    bool first;            // the step's first flight of its bucket: slice is grad_shard itself
    WorkPtr work;
  };
  void on_gradient(size_t index, const torch::Tensor& grad);
  // bf16 working weights: `grad` (what backward hands parameter `index`) into its fp32 main
  // gradient; drop_working_grad releases the bf16 .grad autograd kept of it.
  bool mains() const { return options_.param_dtype != grad_dtype_; }
  void add_main_gradient(size_t index, const torch::Tensor& grad);
  void drop_working_grad();
  void mark_final(size_t index);
  void launch(Bucket& bucket);
  void send_slices(Bucket& bucket);  // ZeRO-1: the bucket's reduce-scatter
  bool flying() const { return options_.shard_gradients && options_.shard && !tree_; }
  // ZeRO-2: the bucket's buffer becomes a flight; `complete`: every member's gradient is final
  // (not a part left by a split backward, or finish()'s rest).
  void take_off(Bucket& bucket, bool complete = false);
  void advance(bool wait);           // ZeRO-2: move flights on, in launch order; `wait` for all
  void limit_airborne(size_t most);  // ZeRO-2: wait until at most `most` buffers are sending
  void land_flight(Flight& flight);
  bool hybrid() const;           // hybrid sharding: slices meet their copies in the other groups
  void replica_all_reduce();     // hybrid ZeRO-2: the shards across the groups, once a step
  Communicator& shards() const;  // the group a bucket's slices are dealt over (shard mode)
  bool narrowed() const;      // gradients cross the group in a narrower dtype than they accumulate
  void land(Bucket& bucket);  // after a narrowed bucket's reduction: widen and average it
  void reduce_tree();         // finish() of layout-invariant numerics
  std::vector<torch::Tensor> buffers() const;  // the buckets, then the holders' gradients
  // ZeRO-3: a unit's buckets, whether its parameters are whole (or being gathered: `gathering`),
  // the micro-batches whose backward has reached it and not finished with it (`open`: it is not
  // freed under them), and how many of its buckets have sent complete gradients since its
  // backward began (a whole backward is done with the unit when all have).
  struct Unit {
    std::vector<size_t> buckets;
    bool whole = true;
    std::vector<WorkPtr> gathering;
    std::set<int> open;
    bool kept = false;  // gathered by a backward this step (reshard_after_backward: false)
    size_t sent = 0;
  };
  bool gates() const { return !units_.empty(); }
  void gather(int unit, bool wait);  // allocate and start (or finish) the unit's all-gathers
  void release(int unit);            // free the unit's parameters (its slices stay)
  void backward_starts(int unit, int prefetch);  // the hook on a unit's output
  void cut_slices();                             // param_shard from the whole parameters
  std::vector<Unit> units_;
  std::vector<int> unit_of_bucket_;
  int64_t peak_param_bytes_ = 0;
  double gather_wait_ = 0;

  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::unordered_map<const c10::TensorImpl*, size_t> index_of_;  // parameter -> its index
  std::vector<torch::Tensor> views_;
  torch::ScalarType grad_dtype_ = torch::kFloat;  // the parameters' own dtype: the gradients'
  std::vector<torch::Tensor> main_;  // ZeRO-2/3 with bf16 weights: fp32 gradients until take-off
  int64_t last_hooked_ = -1;         // bf16 weights: whose .grad autograd may still be writing
  std::vector<bool> hooked_;         // bf16 weights: a hook counted it in this backward action
  std::vector<size_t> bucket_of_;
  std::vector<bool> seen_;     // final in the current fill (ZeRO-2) or step
  std::vector<bool> touched_;  // ZeRO-2: got a gradient this step
  std::deque<Flight> flights_;
  bool narrow_ = false;     // gradients cross the group in reduce_dtype
  int64_t peak_bytes_ = 0;  // gradient_bytes() at its highest since zero_grad() (ZeRO-2: fills)
  int current_microbatch_ = -1;  // ZeRO-2: whose backward the gradients now arriving are
  double held_up_ = 0;           // ZeRO-2: seconds backward waited in limit_airborne this step
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
  // Parameter servers: this step's pushes, in flight until the next zero_grad() (a colocated
  // server takes them only after finish(), when its worker runs its round).
  std::vector<WorkPtr> pushed_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace triax
