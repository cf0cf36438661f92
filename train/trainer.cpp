#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include "checkpoint/parameter_table.h"
#include "checkpoint/state_name.h"
#include "core/autocast_scope.h"
#include "core/bf16_matmul.h"
#include "core/error.h"
#include "core/launch_env.h"
#include "core/log.h"
#include "core/mixed_precision.h"
#include "data/distributed_sampler.h"
#include "parallel/comm/tree_all_reduce.h"
#include "parallel/cp/context_split.h"
#include "parallel/dp/distributed_data_parallel.h"
#include "parallel/ps/server_client.h"
#include "parallel/ps/server_shards.h"
#include "parallel/tp/shard_spec.h"
#include "train/compute_device.h"
#include "train/optim/server_optimizer.h"

namespace triax {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// ddp.mode: parameter_server: one chunk's DDP buckets, then its gradient holder (`holder`, the
// tied head's alias, or undefined), as its servers see them. `params`, `norm_keys`, `partial`
// and `servers` follow the parameters DDP was given (`partial`: sequence-partial ones); `tied`:
// the tied weight's index among them, or -1; `tied_across`: its other copy is on another
// pipeline rank (the servers of both sum them).
std::vector<ServedBuffer> served_buffers(const GradientSync& sync,
                                         const std::vector<OptimizedParam>& params,
                                         const std::vector<std::string>& norm_keys,
                                         const std::vector<bool>& partial,
                                         const std::vector<int>& servers,
                                         const torch::Tensor& holder, int tied, bool tied_across) {
  const auto* ddp = dynamic_cast<const DistributedDataParallel*>(&sync);
  TRIAX_CHECK(ddp != nullptr, "parameter servers need bucketed DDP");
  std::vector<ServedBuffer> out;
  for (int b = 0; b < ddp->num_buckets(); ++b) {
    const DdpBucketView view = ddp->bucket_view(b);
    ServedBuffer buffer;
    buffer.server = servers.at(view.members.front().index);
    for (const auto& m : view.members) {
      TRIAX_CHECK(servers.at(m.index) == buffer.server, "a bucket spans two parameter servers");
      buffer.params.push_back({params.at(m.index).name, norm_keys.at(m.index),
                               params.at(m.index).tensor, m.offset, partial.at(m.index),
                               tied_across && static_cast<int>(m.index) == tied});
      buffer.numel = std::max(buffer.numel, m.offset + m.numel);
    }
    out.push_back(std::move(buffer));
  }
  if (holder.defined()) {
    TRIAX_CHECK(tied >= 0, "a gradient holder without a tied weight");
    ServedBuffer buffer;
    buffer.server = servers.at(static_cast<size_t>(tied));
    buffer.numel = holder.numel();
    buffer.tied_to = params.at(static_cast<size_t>(tied)).name;
    out.push_back(std::move(buffer));
  }
  return out;
}

}  // namespace

Trainer::Trainer(const RunPlan& run, ParallelContext& context, TrainerWeights weights)
    : spec_(model_spec(run.model)),
      config_(run.config),
      device_(compute_device(run.config.run.device, detect_launch(process_env()).local_rank)),
      context_(context),
      plan_(run.batch),
      schedule_(run.schedule),
      plan_stage_layers_(run.stage_layers) {
  TRIAX_CHECK(
      run.layout.dp_size() == context.dp_size() && run.layout.tp_size() == context.tp_size() &&
          run.layout.pp_size() == context.pp_size() && run.layout.cp_size() == context.cp_size() &&
          run.config.ddp.hierarchical == context.dp_gradient_mode(),
      "Trainer: the plan is not for this context's layout and ddp.hierarchical");
  double counted_parameters = 0;
  // The tree's dp levels need the flat group: a hierarchical one associates by node. Under
  // context parallelism the gradients are averaged over dp x cp (each cp rank's are of its part
  // of the sequences) and a sharded optimizer splits over it.
  Communicator& dp = invariant() ? context_.dp() : context_.dp_gradients();
  // The tree's leaves: micro-batches, or samples under train.micro_batch_invariant.
  const int tree_leaves =
      !invariant() ? 0
                   : static_cast<int>(sample_units() ? plan_.local_batch : plan_.num_microbatches);
  // Without split backward passes autograd may add a micro-batch pair in the buckets itself.
  bool split = false;
  for (const Action& a : schedule_.ranks[static_cast<size_t>(context_.pp_rank())]) {
    split = split || a.kind == ActionKind::kBackwardInput || a.kind == ActionKind::kBackwardWeight;
  }
  // Hybrid sharding (optimizer.shard_group S < dp): the groups of S consecutive dp ranks and the
  // groups of ranks at the same place in each (collective over dp, on every dp rank alike).
  const ShardLevel level = shard_level(config_);
  const int64_t group = config_.optimizer.shard_group;
  if (level != ShardLevel::kNone && group > 0 && group < context_.dp_size()) {
    const int d = context_.dp_rank(), s = static_cast<int>(group);
    shard_group_ = context_.dp().split(d / s, d % s);
    for (int c = 0; c < schedule_.chunks; ++c) {
      replica_groups_.push_back(context_.dp().split(d % s, d / s));
    }
    // Named in flight records and timeouts by their members' world ranks.
    std::vector<int> shard_members, replica_members;
    for (int k = 0; k < context_.dp_size(); ++k) {
      if (k / s == d / s) shard_members.push_back(context_.dp().world_rank_of(k));
      if (k % s == d % s) replica_members.push_back(context_.dp().world_rank_of(k));
    }
    shard_group_->set_label("dp shard group", shard_members);
    for (auto& replicas : replica_groups_) replicas->set_label("dp replica group", replica_members);
  }
  std::vector<std::pair<std::string, torch::Tensor>> norm_keys;
  for (int c = 0; c < schedule_.chunks; ++c) {
    const int stage = schedule_.stage_of(context_.pp_rank(), c);
    chunks_.push_back(spec_.build_chunk(config_, stage, run.stage_layers, context_.tp()));
    torch::nn::Module& module = chunks_.back()->module();
    // Built (and initialised) on the host, so every device starts from the same weights.
    module.to(device_);
    const auto traits = collect_param_traits(module);
    std::vector<std::pair<std::string, torch::Tensor>> named;
    // ddp.mode: parameter_server: this chunk's parameters as the servers see them.
    std::vector<OptimizedParam> chunk_params;
    std::vector<std::string> chunk_norm_keys;
    std::vector<bool> chunk_partial;
    int tied = -1;
    std::set<const void*> partial;  // the sequence-partial parameters
    for (auto& p : chunks_.back()->sequence_partial_parameters()) {
      partial.insert(p.unsafeGetTensorImpl());
    }
    DdpOptions ddp;
    ddp.shard = level != ShardLevel::kNone;
    ddp.shard_gradients = level == ShardLevel::kGradients || level == ShardLevel::kParameters;
    ddp.shard_parameters = level == ShardLevel::kParameters;
    ddp.split_backward = split;
    ddp.reshard_after_forward = config_.ddp.reshard_after_forward;
    ddp.reshard_after_backward = config_.ddp.reshard_after_backward;
    ddp.reduce_dtype = MixedPrecision(config_).wire_dtype();
    ddp.param_dtype = MixedPrecision(config_).param_dtype();
    ddp.tree_leaves = tree_leaves;
    ddp.tree_pairs = !split;
    ddp.shard_group = shard_group_.get();
    ddp.replica_group =
        replica_groups_.empty() ? nullptr : replica_groups_[static_cast<size_t>(c)].get();
    const int64_t first_layer = run.stage_layers[static_cast<size_t>(stage)].first;
    // A received activation needs its gradient only when a parameter before it learns.
    input_needs_grad_.push_back(frozen_layers() == 0 || first_layer > frozen_layers());
    for (const auto& item : module.named_parameters()) {
      const ParamTraits& t = traits.at(item.key());
      if (is_frozen(*chunks_.back(), item.key(), t, first_layer)) {
        // No gradient, no optimizer, no communication; its value (and the optimizer state it had
        // when it froze) still goes into checkpoints.
        item.value().requires_grad_(false);
        if (stage == 0) prefix_params_.push_back(item.value());
        frozen_.push_back({StateName::of_parameter(c, item.key()).str(), item.value(),
                           t.counted(context_.tp_rank())});
        if (frozen_.back().counted) counted_parameters += t.real_elements(item.value().numel());
        continue;
      }
      named.emplace_back(item.key(), item.value());
      // ZeRO-3 gathers by unit; ddp.unit_buckets lays any level's buckets out as ZeRO-3 does.
      if (level == ShardLevel::kParameters || config_.ddp.unit_buckets) {
        const int unit = chunks_.back()->parameter_unit(item.key());
        TRIAX_CHECK(unit >= 0, "ddp.shard: no unit for parameter ", item.key());
        ddp.units.push_back(unit);
      }
      params_.push_back({StateName::of_parameter(c, item.key()).str(), item.value(),
                         t.counted(context_.tp_rank())});
      chunk_params.push_back(params_.back());
      chunk_partial.push_back(partial.count(item.value().unsafeGetTensorImpl()) > 0);
      chunk_norm_keys.emplace_back();
      if (params_.back().counted) {
        counted_parameters += t.real_elements(item.value().numel());
        // Chunk keys name layers globally (layer<i>); a shard is its own tensor per tp rank.
        chunk_norm_keys.back() =
            t.sharded ? str(item.key(), "#tp", context_.tp_rank()) : item.key();
        norm_keys.emplace_back(chunk_norm_keys.back(), item.value());
      }
      if (t.tied) {
        tied = static_cast<int>(chunk_params.size()) - 1;
        grads_.tied_copies.push_back(item.value());
        ddp.alone.push_back(item.value());  // its slices line up with the other copy's (ZeRO-2)
      }
    }
    for (auto& p : chunks_.back()->sequence_partial_parameters()) {
      if (p.requires_grad()) grads_.sequence_partial.push_back(p);  // frozen ones have none
    }
    ServerClient* servers = context_.parameter_servers();
    std::vector<int> server_of;
    if (servers != nullptr) {
      // Whole buckets go to one server each: K contiguous runs of the parameters, by bytes.
      const int k = servers->topology().servers();
      if (static_cast<size_t>(k) > named.size()) {
        const std::string why = str("parameter_server.servers: ", k, " is more than the ",
                                    named.size(), " parameter tensors of chunk ", c,
                                    " at this position, which the servers split "
                                    "whole (valid: 1 to ",
                                    named.size(), ")");
        servers->refuse(why);  // every server stops with it too
        throw ConfigError(why);
      }
      std::vector<int64_t> bytes;
      for (const auto& item : named) bytes.push_back(item.second.nbytes());
      server_of = assign_servers(bytes, k);
      ddp.bucket_groups = server_of;
      ddp.push = servers;
      ddp.push_chunk = c;
    }
    ddp_.push_back(make_gradient_sync(std::move(named), dp, config_.ddp, std::move(ddp)));
    torch::Tensor alias = chunks_.back()->tied_head_alias();
    if (alias.defined() && frozen_layers() > 0) {
      alias.requires_grad_(false);  // the embedding it stands for is frozen
    } else if (alias.defined()) {   // both ends of a tied model on this chunk (layout-invariant
                                    // numerics)
      ddp_.back()->add_gradient_holder(alias);
      grads_.tied_copies.push_back(alias);
    }
    // ZeRO-3 cuts each rank's slices in broadcast_parameters, so it calls it in any case.
    if (weights == TrainerWeights::kInitialised || level == ShardLevel::kParameters) {
      ddp_.back()->broadcast_parameters();
    }
    if (servers != nullptr) {
      const bool holds = alias.defined() && frozen_layers() == 0;
      servers->add_chunk(
          c, served_buffers(*ddp_.back(), chunk_params, chunk_norm_keys, chunk_partial, server_of,
                            holds ? alias : torch::Tensor(), tied,
                            !schedule_.placement().ends_on_one_rank()));
    }
    chunks_.back()->set_parameter_gate(ddp_.back()->parameter_gate());
    if (context_.cp_size() > 1) {
      chunks_.back()->set_context_parallel(&context_.cp(), config_.parallel.context_mode);
    }
    grads_.syncs.push_back(ddp_.back().get());
  }
  if (context_.parameter_servers() != nullptr) {
    // The servers sum the tied copies after averaging, as finalize_model_grads does here; a
    // worker's own gradients are only pushed (and may still be on their way).
    grads_.tied_copies.clear();
    grads_.sequence_partial.clear();
  }
  grads_.tp = &context_.tp();
  // Where the first and last stage share a rank (one pipeline rank, or a V) both copies of a tied
  // embedding are there: their sum is local, and the embedding group is not used.
  grads_.embedding = schedule_.placement().ends_on_one_rank() ? nullptr : context_.embedding();
  // A sharded optimizer gathers and sums its slices over the ranks that split the state.
  if (ServerClient* servers = context_.parameter_servers()) {
    // The servers hold the state and take the step; they learn their buffers and values now.
    optimizer_ = std::make_unique<ServerOptimizer>(params_, *servers);
    servers->start(tree_leaves > 0 ? tree_leaves : 1, config_.train.clip_grad);
  } else {
    optimizer_ = make_optimizer(config_, params_, grads_.syncs, shard_group_ ? *shard_group_ : dp,
                                context_.model_parallel());
  }
  if (config_.checkpoint.async && level != ShardLevel::kNone) {
    // A background save streams the slices from its own thread, over a communicator of its own.
    Communicator& over = shard_group_ ? *shard_group_ : dp;
    checkpoint_group_ = over.split(0, over.rank());
  }
  if (invariant()) {
    ordered_norm_ =
        std::make_unique<OrderedGradNorm>(std::move(norm_keys), context_.model_parallel());
    optimizer_->set_norm_source([this] { return ordered_norm_->norm(); });
  }
  // Parameters counted once over the model: the ones the gradient norm counts, sharded ones
  // scaled from padded to real size, summed over one dp replica.
  torch::Tensor count = torch::tensor({static_cast<double>(counted_parameters)}, torch::kDouble);
  context_.model_parallel().all_reduce(count, ReduceOp::kSum);
  model_parameters_ = static_cast<int64_t>(std::llround(count.item<double>()));
  executor_ = std::make_unique<PipelineExecutor>(context_.pp(), run.activation_shape);
  if (run.eval_activation_shape != run.activation_shape) {
    eval_executor_ = std::make_unique<PipelineExecutor>(context_.pp(), run.eval_activation_shape);
  }
}

double Trainer::step(const Batch& global) {
  TRIAX_CHECK(global.size() == plan_.global_batch, "expected a global batch of ",
              plan_.global_batch, " samples, got ", global.size());
  const int rank = context_.dp_rank(), ranks = context_.dp_size();
  const auto deal = invariant() ? DistributedSampler::block_rows : DistributedSampler::local_rows;
  return step_local(Batch{deal(global.inputs, rank, ranks), deal(global.targets, rank, ranks)});
}

StageFunctions Trainer::stage_functions(const Batch& local, int microbatches, bool evaluating) {
  TRIAX_CHECK(microbatches > 0 && local.size() % microbatches == 0, "a batch of ", local.size(),
              " samples does not split into ", microbatches, " micro-batches");
  // Each micro-batch runs as `units` units (one, or each sample under train.micro_batch_invariant:
  // Note [Sample units]); the functions below see unit i, rows [i*mb, (i+1)*mb).
  const int64_t rows = local.size() / microbatches;
  // Under context parallelism this rank computes its part of every sequence (inputs and targets
  // alike): parallel/cp/context_split.h.
  const Batch local_batch = context_part(local).to(device_);  // once for all micro-batches
  StageFunctions stage;
  stage.units = sample_units() ? static_cast<int>(rows) : 1;
  stage.input_needs_grad = input_needs_grad_;
  const int64_t mb = rows / stage.units;
  const MixedPrecision precision(config_);
  stage.forward = [this, local_batch, mb, precision](int chunk, int i, const torch::Tensor& input) {
    const auto scope = precision.compute_scope();
    return chunks_[static_cast<size_t>(chunk)]->forward(input, local_batch.slice(i * mb, mb));
  };
  stage.loss = [this, local_batch, mb, evaluating, precision](int i, const torch::Tensor& output) {
    const auto scope = precision.compute_scope();  // the head's matmul in bf16; the loss in fp32
    const Batch micro = local_batch.slice(i * mb, mb);
    return evaluating ? chunks_.back()->metric(output, micro) : chunks_.back()->loss(output, micro);
  };
  return stage;
}

const Schedule& Trainer::eval_schedule(int microbatches) {
  auto it = eval_schedules_.find(microbatches);
  if (it == eval_schedules_.end()) {
    it = eval_schedules_.emplace(microbatches, forward_only(schedule_.placement(), microbatches))
             .first;
  }
  return it->second;
}

EvalSum Trainer::evaluate_rows(const Batch& local, int microbatches) {
  const double samples = static_cast<double>(local.size());
  const double mean = evaluate_mean(local, microbatches);
  const PipelineExecutor& executor = eval_executor_ ? *eval_executor_ : *executor_;
  return EvalSum{mean * samples, samples, executor.microbatch_losses()};
}

EvalMean Trainer::evaluation_mean(const std::vector<EvalSum>& parts, bool in_blocks) {
  // After a worker was dropped, ranks hold unequal parts (its shares are scored by others).
  if (!(invariant() && in_blocks && dropped_.empty())) {
    EvalSum sum;
    for (const EvalSum& part : parts) {
      sum.sum += part.sum;
      sum.samples += part.samples;
    }
    // Over dp x cp: each cp rank's metric is the mean over its part of the same samples.
    torch::Tensor total = torch::tensor({sum.sum, sum.samples}, torch::kDouble);
    context_.replica().all_reduce(total, ReduceOp::kSum);
    return EvalMean{total[0].item<double>() / total[1].item<double>(),
                    total[1].item<double>() / context_.cp_size()};
  }
  // Equal micro-batches everywhere (m per part on every rank; under train.micro_batch_invariant
  // the entries are samples), so the mean of their metrics is the mean over samples. One gather
  // of every part's metrics, [rank][part][micro-batch], read out in global order
  // [part][rank][micro-batch].
  std::vector<double> mine;
  double samples = 0;  // this rank's: the same on every rank (equal blocks)
  for (const EvalSum& part : parts) {
    mine.insert(mine.end(), part.microbatches.begin(), part.microbatches.end());
    samples += part.samples;
  }
  const int64_t ranks = context_.dp_size(), per_rank = static_cast<int64_t>(mine.size());
  const int64_t m = parts.empty() ? 0 : static_cast<int64_t>(parts.front().microbatches.size());
  torch::Tensor all = torch::empty({per_rank * ranks}, torch::kDouble);
  context_.dp().all_gather_async(all, torch::tensor(mine, torch::kDouble))->wait();
  const double* v = all.data_ptr<double>();
  std::vector<double> global;
  global.reserve(static_cast<size_t>(all.numel()));
  for (size_t k = 0; k < parts.size(); ++k) {
    for (int64_t r = 0; r < ranks; ++r) {
      const double* block = v + r * per_rank + static_cast<int64_t>(k) * m;
      global.insert(global.end(), block, block + m);
    }
  }
  return EvalMean{tree_sum_numbers(global) / static_cast<double>(global.size()),
                  samples * static_cast<double>(ranks)};
}

double Trainer::evaluate_mean(const Batch& local, int microbatches) {
  torch::NoGradGuard no_grad;
  for (auto& chunk : chunks_) chunk->module().eval();
  const StageFunctions stage = stage_functions(local, microbatches, /*evaluating=*/true);
  PipelineExecutor& executor = eval_executor_ ? *eval_executor_ : *executor_;
  const bool tracing = executor.tracing();
  executor.set_tracing(false);
  const double mean = executor.run(eval_schedule(microbatches), stage);
  executor.set_tracing(tracing);
  for (auto& chunk : chunks_) chunk->module().train();
  return mean;
}

double Trainer::evaluate_local(const Batch& local) {
  TRIAX_CHECK(local.size() == plan_.local_batch, "expected this rank's ", plan_.local_batch,
              " samples, got ", local.size());
  const EvalSum part = evaluate_rows(local, static_cast<int>(plan_.num_microbatches));
  if (invariant()) return evaluation_mean({part}, /*in_blocks=*/true).mean;
  // Every rank's share has the same samples (and, over cp, the same number of positions): the
  // global mean is the mean of the ranks' means.
  torch::Tensor mean = torch::tensor({part.sum / part.samples}, torch::kDouble);
  context_.replica().all_reduce(mean, ReduceOp::kAvg);
  return mean.item<double>();
}

double Trainer::step_local(const Batch& local) {
  TRIAX_CHECK(local.size() == plan_.local_batch, "expected this rank's ", plan_.local_batch,
              " samples, got ", local.size());
  const auto start = Clock::now();
  phases_ = StepPhases();
  for (auto& ddp : ddp_) ddp->zero_grad();
  StageFunctions stage =
      stage_functions(local, static_cast<int>(plan_.num_microbatches), /*evaluating=*/false);
  stage.forward = [&, forward = stage.forward](int chunk, int i, const torch::Tensor& input) {
    const auto t = Clock::now();
    torch::Tensor out = forward(chunk, i, input);
    phases_.forward += seconds_since(t);
    return out;
  };
  stage.loss = [&, loss = stage.loss](int i, const torch::Tensor& output) {
    const auto t = Clock::now();
    torch::Tensor out = loss(i, output);
    phases_.forward += seconds_since(t);
    return out;
  };
  stage.before_backward = [&](int chunk, int microbatch, bool last) {
    ddp_[static_cast<size_t>(chunk)]->microbatch_starts(microbatch);
    ddp_[static_cast<size_t>(chunk)]->set_sync(last);
  };
  stage.weights_ready = [&](int chunk, const std::vector<torch::Tensor>& params) {
    ddp_[static_cast<size_t>(chunk)]->gradients_ready(params);
  };
  stage.after_backward = [&](int chunk, int microbatch, bool final) {
    ddp_[static_cast<size_t>(chunk)]->microbatch_done(microbatch, final);
  };
  stage.unscaled = invariant();  // the tree's root is divided once (Note [Micro-batch tree])
  double loss = 0;
  {
    // The emulated bf16 path rounds each weight once a step and keeps the copy for the step;
    // under ZeRO-3 that copy would be the whole model, so each use rounds its gathered unit.
    std::optional<Bf16WeightCopies> weight_copies;
    if (shard_level(config_) != ShardLevel::kParameters) weight_copies.emplace();
    loss = executor_->run(schedule_, stage);
  }
  phases_.backward = seconds_since(start) - phases_.forward;
  phases_.backward_end = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  auto t = Clock::now();
  phases_.ddp_wait = finalize_model_grads(grads_);
  phases_.clip = seconds_since(t) - phases_.ddp_wait;
  t = Clock::now();
  grad_norm_ = optimizer_->step(config_.train.clip_grad);
  phases_.optimizer = seconds_since(t);
  t = Clock::now();
  if (asynchronous() && meeting_) take_dropped_workers();
  if (asynchronous() && !meeting_) {
    // This worker's own micro-batches: the workers do not meet at this step.
    const std::vector<double>& mine = executor_->microbatch_losses();
    loss = tree_sum_numbers(mine) / static_cast<double>(mine.size());
  } else if (invariant()) {
    loss = global_mean_loss();
  } else {
    torch::Tensor mean = torch::tensor({loss}, torch::kDouble);
    context_.replica().all_reduce(mean, ReduceOp::kAvg);  // dp x cp: equal token counts
    loss = mean.item<double>();
  }
  phases_.loss_sync = seconds_since(t);
  phases_.total = seconds_since(start);
  return loss;
}

void Trainer::set_meeting(bool meet) {
  meeting_ = meet;
  if (ServerClient* servers = context_.parameter_servers()) servers->set_meeting(meet);
}

void Trainer::take_dropped_workers() {
  const std::vector<int>& dropped = context_.parameter_servers()->dropped_workers();
  if (dropped.size() == dropped_.size()) return;
  context_.drop_data_ranks(dropped);
  dropped_ = dropped;
  if (context_.rank() == 0) {
    const int launched = context_.dp_size(), left = context_.dp().size();
    std::vector<std::string> ranks;
    for (int d : dropped) ranks.push_back(std::to_string(d));
    log::warn(str("parameter servers: the worker(s) at dp rank(s) ", join(ranks, ","),
                  " were dropped (lost: the heartbeat named them); training goes on with ", left,
                  " of ", launched, " workers: each step now trains on ", left, "/", launched,
                  " of train.global_batch (the dropped workers' shares are skipped), and "
                  "evaluations score their held-out shares on the others"));
  }
}

bool Trainer::asynchronous() const {
  const ServerClient* servers = context_.parameter_servers();
  return servers != nullptr && servers->asynchronous();
}

int64_t Trainer::gradient_bytes() const {
  int64_t bytes = 0;
  for (const auto& sync : ddp_) bytes += sync->gradient_bytes();
  return bytes;
}

int64_t Trainer::parameter_bytes() const {
  int64_t sliced = 0, whole = 0;
  for (const auto& sync : ddp_) sliced += sync->parameter_bytes();
  for (const auto& p : params_) whole += p.tensor.nbytes();
  return sliced > 0 ? sliced : whole;
}

int64_t Trainer::peak_parameter_bytes() const {
  int64_t peak = 0;  // the chunks' peaks may fall at different times: an upper bound
  for (const auto& sync : ddp_) peak += sync->peak_parameter_bytes();
  return peak > 0 ? peak : parameter_bytes();
}

double Trainer::gather_wait_seconds() const {
  double seconds = 0;
  for (const auto& sync : ddp_) seconds += sync->gather_wait_seconds();
  return seconds;
}

int64_t Trainer::peak_gradient_bytes() const {
  int64_t bytes = 0;  // the chunks' peaks may fall at different times: an upper bound
  for (const auto& sync : ddp_) bytes += sync->peak_gradient_bytes();
  return bytes;
}

double Trainer::global_mean_loss() {
  // Every micro-batch's (or, under train.micro_batch_invariant, every sample's) loss on every
  // rank, in global order (block deal: rank r holds [r m, (r + 1) m)), then the tree over them
  // and one division.
  const std::vector<double>& mine = executor_->microbatch_losses();
  const int64_t m = static_cast<int64_t>(mine.size());
  // dp().size(): the workers left, when asynchronous parameter servers dropped some.
  torch::Tensor all = torch::empty({m * context_.dp().size()}, torch::kDouble);
  context_.dp().all_gather_async(all, torch::tensor(mine, torch::kDouble))->wait();
  const double* v = all.data_ptr<double>();
  return tree_sum_numbers(std::vector<double>(v, v + all.numel())) /
         static_cast<double>(all.numel());
}

int64_t Trainer::prefix_layers() const {
  if (context_.pp_rank() != 0) return 0;
  return std::min(frozen_layers(), plan_stage_layers_.front().second);
}

void Trainer::attach_prefix_cache(PrefixCache* cache) {
  // Stage 0 is chunk 0 of pipeline rank 0 under every placement (schedules/stage_placement.h).
  if (context_.pp_rank() != 0 || chunks_.empty()) return;
  const bool taken = chunks_.front()->set_prefix_cache(cache);
  TRIAX_CHECK(taken || cache == nullptr, spec_.name, " chunks cannot cache a frozen prefix");
}

Batch Trainer::context_part(const Batch& local) const {
  if (context_.cp_size() == 1) return local;
  const ContextSplit split(config_.model.seq_len, context_.cp_rank(), context_.cp_size());
  return Batch{split.take(local.inputs, 1), split.take(local.targets, 1), local.samples};
}

void Trainer::with_whole_parameters(const std::function<void()>& use, size_t first) {
  if (first == ddp_.size()) {
    use();
    return;
  }
  ddp_[first]->with_whole_parameters([&] { with_whole_parameters(use, first + 1); });
}

CheckpointContents Trainer::checkpoint_contents(bool background) {
  CheckpointContents out;
  const auto add_all = [&](NamedTensors& named) {
    for (auto& item : named) out.tensors.push_back(std::move(item));
  };
  // A sharded optimizer streams its state a bucket at a time, and the values too where a rank
  // holds only slices of them (ZeRO-3, the fp32 master of bf16 weights) or where a background
  // save would otherwise copy them whole.
  const bool sliced_values = shard_level(config_) == ShardLevel::kParameters ||
                             config_.train.param_dtype == Precision::kBf16 || background;
  StateStream streamed = optimizer_->stream_state(sliced_values, background,
                                                  background ? checkpoint_group_.get() : nullptr);
  if (streamed.stream) {
    for (size_t k = 0; k < params_.size(); ++k) {
      if (!sliced_values) out.tensors.emplace_back(params_[k].name, params_[k].tensor.detach());
      add_all(streamed.by_parameter[k]);
    }
    out.stream = std::move(streamed.stream);
  } else {
    // Replicated, or ZeRO-1/2 before its first step: the values (and any state) are whole here.
    std::vector<NamedTensors> state = optimizer_->state_by_parameter();
    for (size_t k = 0; k < params_.size(); ++k) {
      out.tensors.emplace_back(params_[k].name, params_[k].tensor.detach());
      add_all(state[k]);
    }
  }
  for (const OptimizedParam& p : frozen_) out.tensors.emplace_back(p.name, p.tensor.detach());
  for (const auto& [name, value] : frozen_state_) out.tensors.emplace_back(name, value);
  // The file is written from the host (a CUDA run's tensors are copied; CPU ones stay as they are).
  for (auto& named : out.tensors) {
    if (!named.second.is_meta()) named.second = named.second.to(torch::kCPU);
  }
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const int chunk = static_cast<int>(c);
    for (auto& [name, value] : chunks_[c]->rng_state()) {
      out.tensors.emplace_back(StateName::of_rng(chunk, name).str(), value);
    }
    const auto table =
        parameter_table(chunks_[c]->module(), schedule_.stage_of(context_.pp_rank(), chunk));
    out.parameters.insert(out.parameters.end(), table.begin(), table.end());
  }
  return out;
}

void Trainer::load_state_tensors(const std::map<std::string, torch::Tensor>& tensors) {
  for (const auto& p : params_) {
    const auto it = tensors.find(p.name);
    if (it == tensors.end()) throw Error(str("checkpoint has no tensor ", p.name));
    TRIAX_CHECK(it->second.sizes() == p.tensor.sizes(), "checkpoint tensor ", p.name, " has shape ",
                it->second.sizes(), ", the model ", p.tensor.sizes());
  }
  with_whole_parameters([&] {  // ZeRO-3: each rank's slices are cut from the loaded values
    torch::NoGradGuard no_grad;
    // bf16 working weights: rounded to nearest even, as the optimizer rounds its master (which
    // load_state takes from the same fp32 values).
    for (const auto& p : params_) p.tensor.copy_(tensors.at(p.name));
  });
  optimizer_->load_state(tensors);
  // Frozen parameters: their values, and the optimizer state they had, kept as it is.
  std::set<std::string> frozen_names;
  for (const OptimizedParam& p : frozen_) {
    const auto it = tensors.find(p.name);
    if (it == tensors.end()) throw Error(str("checkpoint has no tensor ", p.name));
    torch::NoGradGuard no_grad;
    p.tensor.copy_(it->second);
    frozen_names.insert(p.name);
  }
  frozen_state_.clear();
  for (const auto& [name, value] : tensors) {
    const StateName state = StateName::parse(name);
    if (state.rng || !state.is_optimizer_state()) continue;
    if (frozen_names.count(StateName::of_parameter(state.chunk, state.parameter).str()) > 0) {
      frozen_state_.emplace_back(name, value.clone());
    }
  }
  // Random streams are absent in imported or resharded checkpoints: those keep their start.
  for (size_t c = 0; c < chunks_.size(); ++c) {
    std::map<std::string, torch::Tensor> streams;
    for (const auto& [name, value] : chunks_[c]->rng_state()) {
      const auto it = tensors.find(StateName::of_rng(static_cast<int>(c), name).str());
      if (it != tensors.end()) streams[name] = it->second;
    }
    chunks_[c]->set_rng_state(streams);
  }
}

bool Trainer::is_frozen(const ModelChunk& chunk, const std::string& name, const ParamTraits& traits,
                        int64_t first_layer) const {
  const int64_t frozen = frozen_layers();
  if (frozen == 0) return false;
  // Units: 0 the embeddings, 1 + i the chunk's block i, then the head (models/transformer.h).
  const int unit = chunk.parameter_unit(name);
  TRIAX_CHECK(unit >= 0, "train.frozen_layers: the model cannot name the layer of ", name);
  if (unit == 0 || traits.tied) return true;  // the embedding, or the head's tied copy of it
  const int64_t layer = first_layer + unit - 1;
  const bool block = name.rfind("layer", 0) == 0;
  return block && layer < frozen;
}

std::vector<double> Trainer::layer_gradient_norms() {
  const int64_t layers = config_.model.layers;
  // Which parameters count, once over tp, and their layers: found once (the tensors stay).
  if (!layer_params_found_) {
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const int stage = schedule_.stage_of(context_.pp_rank(), static_cast<int>(c));
      const int64_t first_layer = plan_stage_layers_[static_cast<size_t>(stage)].first;
      const auto traits = collect_param_traits(chunks_[c]->module());
      for (const auto& item : chunks_[c]->module().named_parameters()) {
        if (item.key().rfind("layer", 0) != 0) continue;
        if (!traits.at(item.key()).counted(context_.tp_rank())) continue;
        layer_params_.emplace_back(item.value(),
                                   first_layer + chunks_[c]->parameter_unit(item.key()) - 1);
      }
    }
    layer_params_found_ = true;
  }
  // Each parameter's sum of squares where it lives, one transfer for all, then by layer.
  std::vector<torch::Tensor> sums;
  std::vector<int64_t> layer_of;
  for (const auto& [param, layer] : layer_params_) {
    if (!param.grad().defined()) continue;  // frozen
    sums.push_back(param.grad().detach().to(torch::kFloat).pow(2).sum());
    layer_of.push_back(layer);
  }
  torch::Tensor squares = torch::zeros({layers}, torch::kDouble);
  if (!sums.empty()) {
    const torch::Tensor each = torch::stack(sums).to(torch::kCPU).to(torch::kDouble);
    const double* value = each.data_ptr<double>();
    double* square = squares.data_ptr<double>();
    for (size_t k = 0; k < layer_of.size(); ++k) square[layer_of[k]] += value[k];
  }
  context_.model_parallel().all_reduce(squares, ReduceOp::kSum);
  std::vector<double> norms(static_cast<size_t>(layers));
  for (int64_t i = 0; i < layers; ++i) {
    norms[static_cast<size_t>(i)] = std::sqrt(squares.data_ptr<double>()[i]);
  }
  return norms;
}

}  // namespace triax
