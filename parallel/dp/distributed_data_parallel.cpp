#include "parallel/dp/distributed_data_parallel.h"

#include <algorithm>
#include <chrono>

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "core/flight_recorder.h"
#include "parallel/comm/tree_all_reduce.h"

namespace triax {

DistributedDataParallel::DistributedDataParallel(
    std::vector<std::pair<std::string, torch::Tensor>> parameters, Communicator& dp,
    DdpOptions options)
    : params_(std::move(parameters)), dp_(dp), options_(options) {
  // As PyTorch's DDP: the first bucket (the last layers, whose gradients come first) is capped
  // at 1 MiB so that communication starts early in backward; the others hold bucket_mb.
  const double limit = options_.bucket_mb * 1024 * 1024;
  const double first_limit = std::min(limit, 1024.0 * 1024.0);
  bucket_of_.assign(params_.size(), 0);
  seen_.assign(params_.size(), false);
  touched_.assign(params_.size(), false);
  views_.resize(params_.size());
  main_.resize(params_.size());
  hooked_.assign(params_.size(), false);
  if (!params_.empty()) grad_dtype_ = params_.front().second.scalar_type();
  TRIAX_CHECK(!mains() || options_.shard, "DDP: bf16 working weights need shard mode");
  // Reverse registration order: the last layers' gradients come first in backward.
  std::vector<std::vector<size_t>> groups(1);
  double bytes = 0;
  const bool aligned = !options_.units.empty();
  const bool gated = options_.shard_parameters;
  TRIAX_CHECK(!aligned || options_.units.size() == params_.size(), "DDP: ", options_.units.size(),
              " units for ", params_.size(), " parameters");
  TRIAX_CHECK(options_.bucket_groups.empty() || options_.bucket_groups.size() == params_.size(),
              "DDP: ", options_.bucket_groups.size(), " bucket groups for ", params_.size(),
              " parameters");
  TRIAX_CHECK(options_.push == nullptr || (!options_.shard && !mains()),
              "DDP: pushed gradients need unsharded fp32 buckets");
  TRIAX_CHECK(!gated || (aligned && options_.shard && options_.shard_gradients &&
                         options_.tree_leaves == 0),
              "DDP: ZeRO-3 needs units, shard mode with shard_gradients, and no micro-batch tree");
  for (size_t k = params_.size(); k-- > 0;) {
    const torch::Tensor& p = params_[k].second;
    TRIAX_CHECK(p.scalar_type() == params_.front().second.scalar_type(), "DDP needs one dtype");
    const double size = static_cast<double>(p.numel() * p.element_size());
    const bool alone = std::any_of(options_.alone.begin(), options_.alone.end(),
                                   [&](const torch::Tensor& t) { return t.is_same(p); });
    // ZeRO-3: a bucket holds one unit's parameters only (a unit is gathered and freed whole).
    const bool new_unit =
        !groups.back().empty() &&
        ((aligned && options_.units[groups.back().back()] != options_.units[k]) ||
         (!options_.bucket_groups.empty() &&
          options_.bucket_groups[groups.back().back()] != options_.bucket_groups[k]));
    if (!groups.back().empty() &&
        (alone || new_unit || bytes + size > (groups.size() == 1 ? first_limit : limit))) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(k);
    bytes += size;
    if (alone) bytes = limit + 1;  // the next parameter starts another bucket
  }
  // ZeRO-2 has no bucket buffers: a flight packs the gradients when it takes off.
  const bool lazy = options_.shard && options_.shard_gradients && options_.tree_leaves == 0;
  const int64_t ranks = shards().size();  // the slices of a sharded bucket
  if (!params_.empty()) {
    narrow_ = options_.reduce_dtype != params_.front().second.scalar_type() && dp_.size() > 1;
  }
  for (auto& members : groups) {
    if (members.empty()) continue;
    int64_t numel = 0;
    for (size_t k : members) numel += params_[k].second.numel();
    if (options_.shard) numel = (numel + ranks - 1) / ranks * ranks;  // equal slices
    Bucket bucket;
    bucket.numel = numel;
    const auto options = params_[members.front()].second.options();  // the gradients'
    const auto working = options.dtype(options_.param_dtype);        // the weights'
    if (!lazy) bucket.buffer = torch::zeros({numel}, options);
    if (options_.shard) {
      bucket.params = torch::zeros({numel}, working);
      bucket.grad_shard = torch::zeros({numel / ranks}, options);
      if (gated) bucket.param_shard = torch::zeros({numel / ranks}, working);
    }
    if (narrow_ && !lazy) {
      bucket.wire = torch::empty({numel}, options.dtype(options_.reduce_dtype));
      if (options_.shard) bucket.wire_shard = torch::empty({numel / ranks}, bucket.wire.options());
    }
    int64_t offset = 0;
    for (size_t k : members) {
      torch::Tensor& p = params_[k].second;
      if (!lazy) views_[k] = bucket.buffer.narrow(0, offset, p.numel()).view(p.sizes());
      bucket.offsets.push_back(offset);
      if (options_.shard) {
        // The parameter now lives in the flat buffer: one slice of it is this rank's shard (bf16
        // working weights: rounded to nearest even, in the dtype the model then computes with).
        torch::NoGradGuard no_grad;
        torch::Tensor flat = bucket.params.narrow(0, offset, p.numel()).view(p.sizes());
        flat.copy_(p);
        p.set_data(flat);
      }
      offset += p.numel();
      bucket_of_[k] = buckets_.size();
    }
    bucket.members = members;
    buckets_.push_back(std::move(bucket));
    if (gated) {
      const int unit = options_.units[members.front()];
      TRIAX_CHECK(unit >= 0, "DDP: parameter ", params_[members.front()].first, " has no unit");
      if (static_cast<size_t>(unit) >= units_.size()) units_.resize(static_cast<size_t>(unit) + 1);
      units_[static_cast<size_t>(unit)].buckets.push_back(buckets_.size() - 1);
      unit_of_bucket_.push_back(unit);
    }
  }
  if (gated) cut_slices();  // whole until broadcast_parameters() frees them
  if (options_.tree_leaves > 0) {
    TRIAX_CHECK(grad_dtype_ == torch::kFloat && !mains(),
                "layout-invariant numerics sum fp32 gradients");
    TRIAX_CHECK(!narrowed(), "layout-invariant numerics reduce gradients in fp32");
    tree_ = std::make_unique<MicrobatchTree>(options_.tree_leaves);
    sync_ = false;
    // Every rank ends with the whole reduced bucket: its shard is a view of it, so the fix-ups
    // after finish() (tied and sequence-parallel sums) reach the sharded optimizer too.
    for (auto& bucket : buckets_) {
      if (!options_.shard) continue;
      const int64_t size = bucket.grad_shard.numel();
      bucket.grad_shard = bucket.buffer.narrow(0, size * shards().rank(), size);
    }
  }
  for (size_t k = 0; k < params_.size(); ++k) {
    index_of_[params_[k].second.unsafeGetTensorImpl()] = k;
    // The hook outlives this object on the parameter; `alive` keeps a late call harmless.
    params_[k].second.register_hook([this, k, alive = alive_](const torch::Tensor& grad) {
      if (*alive) on_gradient(k, grad);
      return grad;
    });
  }
  zero_grad();
}

DistributedDataParallel::~DistributedDataParallel() {
  *alive_ = false;
  for (auto& unit : units_) {  // a prefetch still writing into a bucket (an error path)
    for (auto& work : unit.gathering) {
      try {
        work->wait();
      } catch (...) {
      }
    }
  }
  for (auto& flight : flights_) {
    if (flight.work) {
      try {
        flight.work->wait();
      } catch (...) {
      }
    }
  }
  for (auto& bucket : buckets_) {
    if (bucket.work) {
      try {
        bucket.work->wait();
      } catch (...) {
      }
    }
  }
  for (auto& work : pushed_) {
    try {
      work->wait();
    } catch (...) {
    }
  }
}

void DistributedDataParallel::broadcast_parameters() {
  torch::NoGradGuard no_grad;
  std::vector<WorkPtr> pending;
  // One rank has nothing to receive (and a GPU run's host communicator no GPU tensors to send).
  for (auto& item : params_) {
    if (dp_.size() > 1) pending.push_back(dp_.broadcast_async(item.second, 0));
  }
  for (auto& work : pending) work->wait();
  if (!gates()) return;
  // ZeRO-3: from here on each rank keeps its slices only.
  cut_slices();
  for (size_t u = 0; u < units_.size(); ++u) release(static_cast<int>(u));
}

void DistributedDataParallel::zero_grad() {
  // Pushed buffers are written again from here on. Their sends have landed: the servers took
  // every push before answering the pull that ended the last step.
  for (auto& work : pushed_) work->wait();
  pushed_.clear();
  if (flying()) {
    // Nothing is filled or in the air between steps (finish() landed every flight).
    flights_.clear();
    for (auto& bucket : buckets_) {
      bucket.filling = false;
      bucket.grad_shard.zero_();  // a bucket no parameter of which gets a gradient (allow_unused)
      bucket.launches = 0;
      bucket.pending = static_cast<int>(bucket.members.size());
    }
    for (size_t k = 0; k < params_.size(); ++k) {
      params_[k].second.mutable_grad() = torch::Tensor();
      views_[k] = torch::Tensor();
      main_[k] = torch::Tensor();
    }
    last_hooked_ = -1;
    std::fill(seen_.begin(), seen_.end(), false);
    std::fill(touched_.begin(), touched_.end(), false);
    have_pending_ = false;
    peak_bytes_ = 0;
    held_up_ = 0;
    current_microbatch_ = -1;
    peak_param_bytes_ = 0;
    gather_wait_ = 0;
    return;
  }
  for (auto& bucket : buckets_) bucket.buffer.zero_();
  for (size_t k = 0; k < params_.size(); ++k) {
    torch::Tensor& grad = params_[k].second.mutable_grad();
    if (mains()) {
      grad = torch::Tensor();  // bf16 weights: the hooks add into views_ (fp32) themselves
    } else if (!grad.defined() || !grad.is_same(views_[k])) {
      grad = views_[k];  // e.g. after set-to-none
    }
  }
  last_hooked_ = -1;
  std::fill(seen_.begin(), seen_.end(), false);
  have_pending_ = false;
  for (auto& bucket : buckets_) bucket.pending = static_cast<int>(bucket.members.size());
  if (tree_) tree_->reset();
  held_ = -1;
  root_ready_ = false;
  for (auto& holder : holders_) holder.mutable_grad().zero_();
  partial_.clear();
  written_ = false;
}

void DistributedDataParallel::set_sync(bool last_microbatch) {
  // The tree reduces in finish(); ZeRO-2 reduces every micro-batch's buckets as they complete.
  sync_ = (last_microbatch || flying()) && !tree_;
}

void DistributedDataParallel::add_main_gradient(size_t index, const torch::Tensor& grad) {
  torch::NoGradGuard no_grad;
  if (!flying()) {
    views_[index].add_(grad);  // fp32 += the bf16 gradient's exact value, as AccumulateGrad
    return;
  }
  torch::Tensor& main = main_[index];
  if (main.defined()) {
    main.add_(grad);
  } else {
    main = convert_precision(grad, grad_dtype_);
  }
}

void DistributedDataParallel::drop_working_grad() {
  if (last_hooked_ < 0) return;
  params_[static_cast<size_t>(last_hooked_)].second.mutable_grad() = torch::Tensor();
  last_hooked_ = -1;
}

void DistributedDataParallel::on_gradient(size_t index, const torch::Tensor& grad) {
  if (mains()) {
    // The previous hooked parameter's accumulation has completed (the engine runs each as soon as
    // it is ready): its bf16 .grad, already in its main gradient, goes.
    drop_working_grad();
    add_main_gradient(index, grad);
    last_hooked_ = static_cast<int64_t>(index);
    hooked_[index] = true;
  }
  if (tree_) {
    seen_[index] = true;
    written_ = true;
    return;
  }
  if (!sync_) return;
  if (have_pending_) mark_final(pending_index_);  // its accumulation has completed by now
  if (flying()) {
    // Autograd accumulates this gradient into the parameter's own .grad (taking the incoming
    // tensor when there is none); take_off() packs the bucket's .grads when all are final.
    touched_[index] = true;
    buckets_[bucket_of_[index]].filling = true;
  }
  pending_index_ = index;
  have_pending_ = true;
  // MPI has no progress thread: a posted all-reduce advances only inside MPI calls, so backward
  // drives the in-flight buckets forward as it goes.
  for (auto& bucket : buckets_) {
    if (bucket.work) bucket.work->is_completed();
  }
  for (auto& work : pushed_) work->is_completed();  // parameter servers: the pushes, alike
  if (flying()) advance(/*wait=*/false);
  if (gates()) progress();  // ZeRO-3: the previous unit's prefetch, beside this backward
}

void DistributedDataParallel::gradients_ready(const std::vector<torch::Tensor>& params) {
  if (mains()) {
    // A W pass wrote its sums into the bf16 .grads itself: into the main gradients. (LibTorch
    // 1.13 runs no hook for an accumulator the engine only captures; a LibTorch that does has
    // counted the sum in the hook already: hooked_.)
    drop_working_grad();
    for (const auto& p : params) {
      const auto it = index_of_.find(p.unsafeGetTensorImpl());
      if (it == index_of_.end() || !p.grad().defined()) continue;
      if (!hooked_[it->second]) add_main_gradient(it->second, p.grad());
      params_[it->second].second.mutable_grad() = torch::Tensor();
    }
  }
  if (tree_) {
    for (const auto& p : params) {
      const auto it = index_of_.find(p.unsafeGetTensorImpl());
      if (it != index_of_.end()) seen_[it->second] = true;
    }
    written_ = true;
    return;
  }
  if (!sync_) return;
  if (have_pending_) mark_final(pending_index_);  // no backward is running: it is complete
  have_pending_ = false;
  std::vector<size_t> ready;
  for (const auto& p : params) {
    const auto it = index_of_.find(p.unsafeGetTensorImpl());
    if (it != index_of_.end()) ready.push_back(it->second);
  }
  // ZeRO-2: bucket by bucket, so that each is complete (and leaves) before the next is filled.
  if (flying()) {
    std::stable_sort(ready.begin(), ready.end(),
                     [&](size_t a, size_t b) { return bucket_of_[a] < bucket_of_[b]; });
  }
  for (size_t k : ready) {
    if (flying()) {
      touched_[k] = true;
      buckets_[bucket_of_[k]].filling = true;  // W wrote its gradient into .grad itself
    }
    mark_final(k);
  }
  for (auto& bucket : buckets_) {
    if (bucket.work) bucket.work->is_completed();  // progress (see on_gradient)
  }
  for (auto& work : pushed_) {
    work->is_completed();  // a pushed bucket moves on only inside MPI calls, as an all-reduce
  }
  if (flying()) advance(/*wait=*/false);
}

std::vector<torch::Tensor> DistributedDataParallel::buffers() const {
  std::vector<torch::Tensor> out;
  for (const auto& bucket : buckets_) out.push_back(bucket.buffer);
  for (const auto& holder : holders_) out.push_back(holder.grad());
  return out;
}

void DistributedDataParallel::add_gradient_holder(const torch::Tensor& holder) {
  TRIAX_CHECK(tree_ != nullptr, "gradient holders are summed by layout-invariant numerics only");
  holders_.push_back(holder);
  // Autograd adds into a defined .grad in place: the holder then behaves as a bucket does.
  holders_.back().mutable_grad() = torch::zeros_like(holder);
}

void DistributedDataParallel::microbatch_starts(int microbatch) {
  drop_working_grad();  // a W pass must not add onto a bf16 .grad already counted
  std::fill(hooked_.begin(), hooked_.end(), false);  // a new backward action
  if (flying()) {
    if (microbatch == current_microbatch_) return;
    // ZeRO-2: a flight carries one micro-batch's gradients. A split backward may come back to a
    // bucket another micro-batch's pass left incomplete (I of the next before W of this one):
    // that part leaves now, and the rest follows in a flight of its own. The parts touch
    // different parameters, so their slices add exactly: every schedule reduces the same sums
    // (ZB-H1 equals 1F1B bit for bit).
    if (have_pending_) mark_final(pending_index_);  // no backward is running: it is complete
    have_pending_ = false;
    for (auto& bucket : buckets_) {
      if (bucket.filling) take_off(bucket);
    }
    current_microbatch_ = microbatch;
    return;
  }
  if (held_ < 0 || microbatch == held_ + 1) return;
  // Another micro-batch's backward would land on the held one: it enters the tree alone.
  torch::NoGradGuard no_grad;
  root_ready_ = tree_->add(held_, held_ + 1, buffers());
  held_ = -1;
  for (auto& t : buffers()) t.zero_();
}

void DistributedDataParallel::microbatch_done(int microbatch, bool final) {
  drop_working_grad();
  if (gates() && final) {
    // ZeRO-3: this micro-batch's backward is done with every unit of the chunk.
    for (size_t u = 0; u < units_.size(); ++u) {
      Unit& unit = units_[u];
      unit.open.erase(microbatch);
      if (unit.open.empty() && options_.reshard_after_backward) release(static_cast<int>(u));
    }
  }
  if (!tree_) return;
  torch::NoGradGuard no_grad;
  // A split backward's I adds only recomputed blocks' gradients, its W the others': the two parts
  // touch different parameters, so their sum is exact whatever its order.
  if (!final) {
    if (!written_) return;
    partial_[microbatch] = buffers();
    for (auto& t : partial_[microbatch]) t = t.clone();
    for (auto& t : buffers()) t.zero_();
    written_ = false;
    return;
  }
  written_ = false;
  const auto part = partial_.find(microbatch);
  if (part != partial_.end()) {
    std::vector<torch::Tensor> now = buffers();
    at::_foreach_add_(now, part->second);
    partial_.erase(part);
  }
  if (options_.tree_pairs && held_ < 0 && tree_->is_node(microbatch, microbatch + 2)) {
    held_ = microbatch;  // the next micro-batch's backward adds onto it
    return;
  }
  int first = microbatch;
  if (held_ >= 0) {
    TRIAX_CHECK(held_ == microbatch - 1, "DDP: micro-batch ", microbatch, " ended on ", held_);
    first = held_;
    held_ = -1;
  }
  root_ready_ = tree_->add(first, microbatch + 1, buffers());
  if (!root_ready_) {
    for (auto& t : buffers()) t.zero_();
  }
}

void DistributedDataParallel::reduce_tree() {
  torch::NoGradGuard no_grad;
  TRIAX_CHECK(root_ready_ && held_ < 0 && partial_.empty(),
              "layout-invariant numerics: a micro-batch's backward did not finish this step");
  const double global_microbatches = static_cast<double>(tree_->leaves()) * dp_.size();
  const std::vector<torch::Tensor> targets = buffers();  // they hold the root
  if (options_.push != nullptr) {
    // The servers add the workers' roots in the tree's order over ranks and divide once.
    for (size_t b = 0; b < targets.size(); ++b) {
      pushed_.push_back(options_.push->push(options_.push_chunk, static_cast<int>(b), targets[b]));
    }
    tree_->reset();
    return;
  }
  for (size_t b = 0; b < targets.size(); ++b) {
    torch::Tensor target = targets[b];
    if (dp_.size() > 1) {
      const flight::Label label(str("DDP tree all-reduce ", b, " of ", targets.size()));
      tree_all_reduce(dp_, target);
    }
    // One division of the whole batch's sum: the same rounding at every dp.
    target.div_(global_microbatches);
  }
  tree_->reset();
}

void DistributedDataParallel::mark_final(size_t index) {
  if (seen_[index]) return;
  seen_[index] = true;
  Bucket& bucket = buckets_[bucket_of_[index]];
  if (--bucket.pending == 0) launch(bucket);
}

void DistributedDataParallel::launch(Bucket& bucket) {
  if (flying()) {
    take_off(bucket, /*complete=*/true);
    return;
  }
  if (options_.shard) {
    // With allow_unused a rank's unused parameters may complete a bucket later than another
    // rank's: finish() then sends every bucket, in bucket order.
    if (!options_.allow_unused) send_slices(bucket);
    return;
  }
  const flight::Label label(str("DDP bucket ", &bucket - buckets_.data(), " of ", buckets_.size()));
  if (options_.push != nullptr) {
    pushed_.push_back(options_.push->push(
        options_.push_chunk, static_cast<int>(&bucket - buckets_.data()), bucket.buffer));
    return;
  }
  if (dp_.size() == 1) return;
  if (!bucket.wire.defined()) {
    bucket.work = dp_.all_reduce_async(bucket.buffer, ReduceOp::kAvg);
    return;
  }
  bucket.wire.copy_(bucket.buffer);
  bucket.work = dp_.all_reduce_async(bucket.wire, ReduceOp::kSum);
}

void DistributedDataParallel::send_slices(Bucket& bucket) {
  // ZeRO-1: this rank's averaged slice (a group of one copies it: the shard is still filled).
  const flight::Label label(
      str("DDP reduce-scatter bucket ", &bucket - buckets_.data(), " of ", buckets_.size()));
  if (bucket.wire.defined()) {
    bucket.wire.copy_(bucket.buffer);
    bucket.work = shards().reduce_scatter_async(bucket.wire_shard, bucket.wire, ReduceOp::kSum);
  } else {
    bucket.work = shards().reduce_scatter_async(bucket.grad_shard, bucket.buffer, ReduceOp::kAvg);
  }
}

Communicator& DistributedDataParallel::shards() const {
  return options_.shard_group != nullptr ? *options_.shard_group : dp_;
}

bool DistributedDataParallel::narrowed() const {
  return narrow_;
}

void DistributedDataParallel::land(Bucket& bucket) {
  // Dividing after widening keeps the average's rounding in fp32.
  torch::Tensor& target = options_.shard ? bucket.grad_shard : bucket.buffer;
  target.copy_(options_.shard ? bucket.wire_shard : bucket.wire);
  target.div_(dp_.size());
}

std::vector<DdpBucketView> DistributedDataParallel::bucket_views() const {
  std::vector<DdpBucketView> views;
  if (!options_.shard) return views;
  for (int b = 0; b < num_buckets(); ++b) views.push_back(bucket_view(b));
  return views;
}

DdpBucketView DistributedDataParallel::bucket_view(int i) const {
  const Bucket& bucket = buckets_.at(static_cast<size_t>(i));
  DdpBucketView view;
  view.params = bucket.params;
  view.grad_shard = bucket.grad_shard;
  view.param_shard = bucket.param_shard;
  view.shard_size = bucket.grad_shard.defined() ? bucket.grad_shard.numel() : 0;
  view.shard_begin = view.shard_size * shards().rank();
  for (size_t m = 0; m < bucket.members.size(); ++m) {
    const size_t k = bucket.members[m];
    view.members.push_back({k, bucket.offsets[m], params_[k].second.numel()});
  }
  return view;
}

void DistributedDataParallel::finish() {
  drop_working_grad();
  if (have_pending_) mark_final(pending_index_);
  have_pending_ = false;
  std::vector<std::string> unused;
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!(flying() ? touched_[k] : seen_[k])) unused.push_back(params_[k].first);
  }
  // Every rank must issue the same all-reduces, so a missing gradient is a hard error unless
  // allowed (then it is zero: its bucket slot was zeroed) — never a silent mismatch or a hang.
  if (!unused.empty() && !options_.allow_unused) {
    throw Error(str("DDP: no gradient reached ", unused.size(), " parameter(s) in this step: ",
                    join(unused, ", "), " (set ddp.allow_unused: true if that is intended)"));
  }
  if (flying()) {
    // What backward left in buffers: a bucket with a parameter that got no gradient, or the
    // second fill of a bucket whose parameters a split backward's passes reached out of turn.
    for (auto& bucket : buckets_) {
      if (bucket.filling) take_off(bucket);
    }
    const auto start = std::chrono::steady_clock::now();
    advance(/*wait=*/true);
    replica_all_reduce();
    // ZeRO-3: the optimizer updates the slices next; every unit is gathered afresh after.
    for (size_t u = 0; u < units_.size(); ++u) {
      units_[u].open.clear();
      units_[u].kept = false;
      units_[u].sent = 0;
      release(static_cast<int>(u));
    }
    // What finish() waited for, and what backward waited for a buffer to leave (limit_airborne).
    exposed_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() + held_up_;
    for (auto& bucket : buckets_) bucket.pending = static_cast<int>(bucket.members.size());
    std::fill(seen_.begin(), seen_.end(), false);
    std::fill(touched_.begin(), touched_.end(), false);
    return;
  }
  if (tree_) {
    const auto start = std::chrono::steady_clock::now();
    reduce_tree();
    exposed_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fill(seen_.begin(), seen_.end(), false);
    return;
  }
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!seen_[k]) mark_final(k);
  }
  if (options_.shard && options_.allow_unused) {
    for (auto& bucket : buckets_) send_slices(bucket);
  }
  const auto start = std::chrono::steady_clock::now();
  Communicator* replicas = options_.shard ? options_.replica_group : nullptr;
  const bool across = replicas != nullptr && replicas->size() > 1;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    if (bucket.work) bucket.work->wait();
    bucket.work = nullptr;
    if (!across) continue;
    // Hybrid sharding: the group has averaged its slice over its own ranks (a bf16 wire: summed);
    // the slice now meets its copies in the other groups, while the later buckets' reduce-scatters
    // are still in flight. The average of averages over equal groups is the average over dp.
    const flight::Label label(str("DDP replica all-reduce bucket ", b, " of ", buckets_.size()));
    bucket.work = bucket.wire.defined()
                      ? replicas->all_reduce_async(bucket.wire_shard, ReduceOp::kSum)
                      : replicas->all_reduce_async(bucket.grad_shard, ReduceOp::kAvg);
  }
  if (across) {
    for (auto& bucket : buckets_) {
      bucket.work->wait();
      bucket.work = nullptr;
    }
  }
  if (narrowed()) {
    for (auto& bucket : buckets_) land(bucket);
  }
  exposed_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto& bucket : buckets_) bucket.pending = static_cast<int>(bucket.members.size());
  std::fill(seen_.begin(), seen_.end(), false);
}

void DistributedDataParallel::take_off(Bucket& bucket, bool complete) {
  torch::NoGradGuard no_grad;
  const size_t b = static_cast<size_t>(&bucket - buckets_.data());
  const flight::Label label(str("DDP reduce-scatter bucket ", b, " of ", buckets_.size()));
  // At most kMaxAirborne buckets' buffers wait for their reduce-scatter (as FSDP limits its
  // all-gathers): without a progress thread MPI may finish them late, and their memory is what
  // ZeRO-2 saves.
  constexpr size_t kMaxAirborne = 2;
  limit_airborne(kMaxAirborne - 1);
  Flight flight;
  flight.bucket = b;
  flight.first = bucket.launches++ == 0;
  // The members' gradients, as autograd (or a W pass) left them, packed into the buffer that is
  // sent: in the wire's dtype at once under a bf16 wire (the same rounding as ZeRO-1's copy).
  const torch::Tensor& front = params_[bucket.members.front()].second;
  flight.buffer = torch::empty(
      {bucket.numel}, front.options().dtype(narrow_ ? options_.reduce_dtype : grad_dtype_));
  // The most held while packing: every .grad still here and the whole buffer (each .grad is
  // released as soon as it is copied).
  peak_bytes_ =
      std::max(peak_bytes_, gradient_bytes() + static_cast<int64_t>(flight.buffer.nbytes()));
  int64_t end = 0;
  for (size_t m = 0; m < bucket.members.size(); ++m) {
    torch::Tensor& p = params_[bucket.members[m]].second;
    torch::Tensor part = flight.buffer.narrow(0, bucket.offsets[m], p.numel()).view(p.sizes());
    // bf16 working weights: the fp32 main gradient; else what autograd accumulated in .grad.
    torch::Tensor& grad = mains() ? main_[bucket.members[m]] : p.mutable_grad();
    if (grad.defined()) {
      part.copy_(grad);
    } else {
      part.zero_();  // no gradient this fill (finish(): an unused parameter)
    }
    grad = torch::Tensor();              // released at once: the next fill starts afresh
    p.mutable_grad() = torch::Tensor();  // (bf16 weights: their .grad, counted already)
    seen_[bucket.members[m]] = false;
    end = std::max(end, bucket.offsets[m] + p.numel());
  }
  flight.buffer.narrow(0, end, bucket.numel - end).zero_();  // the padding to equal slices
  bucket.filling = false;
  bucket.pending = static_cast<int>(bucket.members.size());
  const int64_t slice = bucket.numel / shards().size();
  // The step's first fp32 flight lands in the gradient shard itself: with one micro-batch, the
  // same operations as ZeRO-1's reduce-scatter, bit for bit.
  flight.slice =
      flight.first && !narrow_ ? bucket.grad_shard : torch::empty({slice}, flight.buffer.options());
  flight.work = shards().reduce_scatter_async(flight.slice, flight.buffer,
                                              narrow_ ? ReduceOp::kSum : ReduceOp::kAvg);
  flights_.push_back(std::move(flight));
  peak_bytes_ = std::max(peak_bytes_, gradient_bytes());  // a slice to receive into
  if (gates() && complete && !options_.split_backward) {
    // ZeRO-3: once every bucket of the unit has sent its complete gradients, its backward is
    // done (each parameter's accumulation ran after every operation that read it); a later use
    // gathers it again through its gate. (A split backward's W pass still reads weights after:
    // microbatch_done frees the unit there.)
    const int u = unit_of_bucket_[b];
    Unit& unit = units_[static_cast<size_t>(u)];
    if (++unit.sent >= unit.buckets.size()) {
      unit.sent = 0;
      unit.open.clear();  // one micro-batch's backward at a time without a split
      if (options_.reshard_after_backward) release(u);
    }
  }
}

void DistributedDataParallel::limit_airborne(size_t most) {
  for (;;) {
    size_t airborne = 0;
    Flight* oldest = nullptr;
    for (Flight& f : flights_) {
      if (!f.buffer.defined()) continue;
      if (oldest == nullptr) oldest = &f;
      ++airborne;
    }
    if (airborne <= most) return;
    const auto start = std::chrono::steady_clock::now();
    oldest->work->wait();  // every rank launched the same flights: the oldest completes
    held_up_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    advance(/*wait=*/false);
  }
}

void DistributedDataParallel::advance(bool wait) {
  for (Flight& flight : flights_) {
    if (!flight.work) continue;
    if (wait) {
      flight.work->wait();
    } else if (!flight.work->is_completed()) {
      break;
    }
    flight.work = nullptr;
    flight.buffer = torch::Tensor();  // sent: the bucket's memory is free
  }
  // Slices are added in launch order: a bucket's gradient shard sums its flights in the same
  // order every step (under hybrid sharding the replicas then meet in replica_all_reduce).
  while (!flights_.empty() && !flights_.front().work) {
    land_flight(flights_.front());
    flights_.pop_front();
  }
}

bool DistributedDataParallel::hybrid() const {
  return options_.shard && options_.replica_group != nullptr && options_.replica_group->size() > 1;
}

void DistributedDataParallel::replica_all_reduce() {
  if (!hybrid()) return;
  // Hybrid ZeRO-2: each micro-batch's reduce-scatter stays inside the group, and its slices add
  // up in the gradient shard; the shard meets its copies in the other groups once per step, so
  // the link between groups (nodes) carries 4P/S bytes a step (2P/S on a bf16 wire) whatever
  // the number of micro-batches, as ZeRO-1's hybrid reduction does (one all-reduce per flight
  // carried m times that: tools/bench/hsdp_link.sh). fp32: the average of the groups' sums of
  // averages is dp's average. bf16 wire: the groups' sums cross in bf16, summed, and are divided
  // by dp once in fp32, as ZeRO-1's land(). The bf16 copies are sent one bucket at a time (each
  // freed once landed): at most one bucket's copy beside the shards.
  Communicator& replicas = *options_.replica_group;
  torch::NoGradGuard no_grad;
  if (!narrow_) {  // in place, every bucket in flight at once
    std::vector<WorkPtr> works;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const flight::Label label(str("DDP replica all-reduce bucket ", b, " of ", buckets_.size()));
      works.push_back(replicas.all_reduce_async(buckets_[b].grad_shard, ReduceOp::kAvg));
    }
    for (auto& work : works) work->wait();
    return;
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    const flight::Label label(str("DDP replica all-reduce bucket ", b, " of ", buckets_.size()));
    torch::Tensor wire = bucket.grad_shard.to(options_.reduce_dtype);
    peak_bytes_ = std::max(peak_bytes_, gradient_bytes() + static_cast<int64_t>(wire.nbytes()));
    replicas.all_reduce(wire, ReduceOp::kSum);
    bucket.grad_shard.copy_(wire);
    bucket.grad_shard.div_(dp_.size());
  }
}

void DistributedDataParallel::land_flight(Flight& flight) {
  torch::NoGradGuard no_grad;
  torch::Tensor& shard = buckets_[flight.bucket].grad_shard;
  if (narrow_ && hybrid()) {
    // The group's bf16 sum, widened and added up; replica_all_reduce sums the groups in bf16 and
    // divides by dp once, as ZeRO-1's land() does (one micro-batch: its operations exactly).
    if (flight.first) {
      shard.copy_(flight.slice);
    } else {
      shard.add_(flight.slice.to(shard.scalar_type()));
    }
  } else if (narrow_) {
    // As land(): widen, then divide in fp32 (a sum over dp crossed the wire).
    if (flight.first) {
      shard.copy_(flight.slice);
      shard.div_(dp_.size());
    } else {
      torch::Tensor widened = flight.slice.to(shard.scalar_type());
      widened.div_(dp_.size());
      shard.add_(widened);
    }
  } else if (!flight.first) {
    shard.add_(flight.slice);
  }
}

torch::Tensor DistributedDataParallel::gradient_shard(const torch::Tensor& param) const {
  const auto it = index_of_.find(param.unsafeGetTensorImpl());
  if (it == index_of_.end() || !reduces_to_slices()) return torch::Tensor();
  const Bucket& bucket = buckets_[bucket_of_[it->second]];
  const auto at = std::find(bucket.members.begin(), bucket.members.end(), it->second);
  const int64_t offset = bucket.offsets[static_cast<size_t>(at - bucket.members.begin())];
  const int64_t size = bucket.grad_shard.numel();
  const int64_t begin = size * shards().rank();
  const int64_t lo = std::max(begin, offset);
  const int64_t hi = std::min(begin + size, offset + param.numel());
  if (hi <= lo) return bucket.grad_shard.narrow(0, 0, 0);  // none of it in this rank's slice
  return bucket.grad_shard.narrow(0, lo - begin, hi - lo);
}

int64_t DistributedDataParallel::gradient_bytes() const {
  int64_t bytes = 0;
  const auto add = [&](const torch::Tensor& t) {
    if (t.defined()) bytes += t.nbytes();
  };
  for (const auto& bucket : buckets_) {
    add(bucket.buffer);
    add(bucket.wire);
    add(bucket.wire_shard);
    if (options_.shard && !tree_) add(bucket.grad_shard);  // the tree's shard is a view
  }
  for (const auto& flight : flights_) {
    add(flight.buffer);
    if (!flight.first || narrow_) add(flight.slice);
  }
  if (flying()) {  // the gradients autograd is accumulating, until their bucket takes off
    for (const auto& item : params_) add(item.second.grad());
    for (const auto& main : main_) add(main);
  }
  return bytes;
}

// ZeRO-3.

namespace {

// A tensor's storage emptied and refilled in place: every tensor viewing it (the parameters, and
// the copies of them autograd saved for backward) reads the refilled bytes, with no version
// change (the values come back as they were).
void free_storage(const torch::Tensor& t) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(storage->allocator()->allocate(0));
  storage->set_nbytes(0);
}

void refill_storage(const torch::Tensor& t) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
  storage->set_nbytes(bytes);
}

}  // namespace

void DistributedDataParallel::cut_slices() {
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) {
    const int64_t size = bucket.param_shard.numel();
    bucket.param_shard.copy_(bucket.params.narrow(0, size * shards().rank(), size));
  }
}

void DistributedDataParallel::gather(int u, bool wait) {
  if (u < 0 || static_cast<size_t>(u) >= units_.size()) return;
  Unit& unit = units_[static_cast<size_t>(u)];
  if (!unit.whole) {
    const flight::Label label(str("ZeRO-3 all-gather unit ", u, " of ", units_.size()));
    for (size_t b : unit.buckets) {
      Bucket& bucket = buckets_[b];
      refill_storage(bucket.params);
      unit.gathering.push_back(shards().all_gather_async(bucket.params, bucket.param_shard));
    }
    unit.whole = true;
    unit.sent = 0;
    peak_param_bytes_ = std::max(peak_param_bytes_, parameter_bytes());
  }
  if (!wait || unit.gathering.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  for (auto& work : unit.gathering) work->wait();
  unit.gathering.clear();
  gather_wait_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void DistributedDataParallel::release(int u) {
  Unit& unit = units_[static_cast<size_t>(u)];
  if (!unit.whole || !unit.open.empty()) return;  // a backward in progress still reads it
  // reshard_after_backward: false keeps a unit its backward gathered until finish().
  if (unit.kept && !options_.reshard_after_backward) return;
  for (auto& work : unit.gathering) work->wait();  // never free a buffer a collective writes
  unit.gathering.clear();
  for (size_t b : unit.buckets) free_storage(buckets_[b].params);
  unit.whole = false;
  unit.sent = 0;
}

void DistributedDataParallel::progress() {
  for (auto& unit : units_) {
    for (auto& work : unit.gathering) work->is_completed();
  }
}

void DistributedDataParallel::enter(int unit, int prefetch) {
  gather(unit, /*wait=*/true);
  gather(prefetch, /*wait=*/false);
}

void DistributedDataParallel::leave(int unit, const torch::Tensor& output, int prefetch) {
  if (unit < 0 || static_cast<size_t>(unit) >= units_.size()) return;
  const bool training = output.defined() && output.requires_grad() && torch::GradMode::is_enabled();
  if (training) {
    // The output's gradient is complete just before the unit's backward starts.
    output.register_hook([this, unit, prefetch, alive = alive_](const torch::Tensor& grad) {
      if (*alive) backward_starts(unit, prefetch);
      return grad;
    });
  }
  if (!training || options_.reshard_after_forward) release(unit);
}

void DistributedDataParallel::backward_starts(int unit, int prefetch) {
  // The engine has finished the last hooked parameter's accumulation (it runs each accumulation
  // as soon as it is ready, before any other node): it is final, and a unit whose buckets are
  // all sent is freed before the next one is gathered — two blocks whole at a time, not three.
  if (sync_ && have_pending_) {
    mark_final(pending_index_);
    have_pending_ = false;
  }
  if (static_cast<size_t>(unit) < units_.size()) {
    units_[static_cast<size_t>(unit)].open.insert(current_microbatch_);
    units_[static_cast<size_t>(unit)].kept = true;
  }
  gather(unit, /*wait=*/true);
  gather(prefetch, /*wait=*/false);
}

void DistributedDataParallel::with_whole_parameters(const std::function<void()>& use) {
  if (!gates()) {
    use();
    return;
  }
  for (size_t u = 0; u < units_.size(); ++u) gather(static_cast<int>(u), /*wait=*/true);
  use();
  cut_slices();
  for (size_t u = 0; u < units_.size(); ++u) release(static_cast<int>(u));
}

int64_t DistributedDataParallel::parameter_bytes() const {
  int64_t bytes = 0;
  for (const auto& bucket : buckets_) {
    if (bucket.param_shard.defined()) bytes += bucket.param_shard.nbytes();
  }
  for (const auto& unit : units_) {
    if (!unit.whole) continue;
    for (size_t b : unit.buckets) bytes += buckets_[b].params.nbytes();
  }
  return bytes;
}

}  // namespace triax
