#include "train/gpt_trainer.h"

#include <chrono>
#include <cmath>

#include "checkpoint/parameter_table.h"
#include "checkpoint/state_name.h"
#include "core/error.h"
#include "data/distributed_sampler.h"
#include "models/gpt_stages.h"
#include "parallel/dp/grad_norm.h"
#include "parallel/tp/shard_spec.h"
#include "train/finalize_grads.h"

namespace triax {

GptTrainer::GptTrainer(const RunPlan& run, ParallelContext& context)
    : config_(run.config), context_(context), plan_(run.batch), schedule_(run.schedule) {
  TRIAX_CHECK(run.model == ModelKind::kGpt && run.layout.dp_size() == context.dp_size() &&
                  run.layout.tp_size() == context.tp_size() &&
                  run.layout.pp_size() == context.pp_size() &&
                  run.config.ddp.hierarchical == context.dp_gradient_mode(),
              "GptTrainer: the plan is not a GPT plan for this context's layout and "
              "ddp.hierarchical");
  const int p = context_.pp_size();
  const int v = schedule_.chunks;
  GptOptions whole =
      GptOptions::from_config(config_.model, static_cast<uint64_t>(config_.train.seed));
  whole.recompute = config_.train.recompute;
  whole.recompute_layers = config_.train.recompute_layers;
  whole.sequence_parallel = config_.parallel.sequence;
  const auto& ranges = run.stage_layers;
  double counted_parameters = 0;
  Communicator& dp = context_.dp_gradients();
  for (int c = 0; c < v; ++c) {
    const int stage = c * p + context_.pp_rank();
    chunks_.emplace_back(gpt_stage_options(whole, stage, ranges), context_.tp());
    const auto traits = collect_param_traits(*chunks_.back());
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : chunks_.back()->named_parameters()) {
      const ParamTraits& t = traits.at(item.key());
      named.emplace_back(item.key(), item.value());
      params_.push_back({StateName::of_parameter(c, item.key()).str(), item.value(),
                         t.counted(context_.tp_rank())});
      if (params_.back().counted) counted_parameters += t.real_elements(item.value().numel());
      if (t.tied) grads_.tied_copies.push_back(item.value());
    }
    for (auto& p : chunks_.back()->sequence_partial_parameters()) {
      grads_.sequence_partial.push_back(p);
    }
    ddp_.push_back(make_gradient_sync(std::move(named), dp, config_.ddp, config_.optimizer.shard));
    ddp_.back()->broadcast_parameters();
    grads_.syncs.push_back(ddp_.back().get());
  }
  grads_.tp = &context_.tp();
  grads_.embedding = context_.embedding();
  optimizer_ = make_optimizer(config_, params_, grads_.syncs, dp, context_.model_parallel());
  eval_schedule_ = forward_only(p, static_cast<int>(plan_.num_microbatches), v);
  // Parameters counted once over the model: the ones the gradient norm counts, sharded ones
  // scaled from padded to real size, summed over one dp replica.
  torch::Tensor count = torch::tensor({static_cast<double>(counted_parameters)}, torch::kDouble);
  context_.model_parallel().all_reduce(count, ReduceOp::kSum);
  model_parameters_ = static_cast<int64_t>(std::llround(count.item<double>()));
  // Between stages: [micro-batch, sequence, hidden]; in training with sequence parallelism each
  // tp rank sends its part of the sequence. Evaluation keeps the whole sequence.
  const int64_t seq = config_.model.seq_len;
  const bool sp = config_.parallel.sequence && context_.tp_size() > 1;
  executor_ = std::make_unique<PipelineExecutor>(
      context_.pp(), std::vector<int64_t>{plan_.micro_batch, sp ? seq / context_.tp_size() : seq,
                                          config_.model.hidden});
  if (sp) {
    eval_executor_ = std::make_unique<PipelineExecutor>(
        context_.pp(), std::vector<int64_t>{plan_.micro_batch, seq, config_.model.hidden});
  }
}

double GptTrainer::step(const torch::Tensor& tokens) {
  TRIAX_CHECK(tokens.dim() == 2 && tokens.size(0) == plan_.global_batch &&
                  tokens.size(1) == config_.model.seq_len + 1,
              "expected tokens [", plan_.global_batch, ", ", config_.model.seq_len + 1, "], got ",
              tokens.sizes());
  return step_local(DistributedSampler::local_rows(tokens, context_.dp_rank(), context_.dp_size()));
}

void GptTrainer::set_learning_rate(double lr) {
  optimizer_->set_learning_rate(lr);
}

StageFunctions GptTrainer::stage_functions(const torch::Tensor& local) {
  TRIAX_CHECK(local.dim() == 2 && local.size(0) == plan_.local_batch &&
                  local.size(1) == config_.model.seq_len + 1,
              "expected local tokens [", plan_.local_batch, ", ", config_.model.seq_len + 1,
              "], got ", local.sizes());
  // Micro-batch i is rows [i*mb, (i+1)*mb): inputs are tokens[:, :-1], targets tokens[:, 1:].
  const int64_t mb = plan_.micro_batch;
  const int64_t seq = config_.model.seq_len;
  StageFunctions stage;
  stage.forward = [this, local, mb, seq](int chunk, int i, const torch::Tensor& input) {
    Gpt& part = chunks_[static_cast<size_t>(chunk)];
    return part->run_layers(
        input.defined() ? input : part->embed(local.narrow(0, i * mb, mb).narrow(1, 0, seq)));
  };
  stage.loss = [this, local, mb, seq](int i, const torch::Tensor& output) {
    return chunks_.back()->loss_from_hidden(output, local.narrow(0, i * mb, mb).narrow(1, 1, seq));
  };
  return stage;
}

double GptTrainer::evaluate_local(const torch::Tensor& local) {
  torch::NoGradGuard no_grad;
  for (auto& chunk : chunks_) chunk->eval();
  StageFunctions stage = stage_functions(local);
  PipelineExecutor& executor = eval_executor_ ? *eval_executor_ : *executor_;
  const bool tracing = executor.tracing();
  executor.set_tracing(false);
  const double loss = executor.run(eval_schedule_, stage);
  executor.set_tracing(tracing);
  for (auto& chunk : chunks_) chunk->train();
  torch::Tensor mean = torch::tensor({loss}, torch::kDouble);
  context_.dp().all_reduce(mean, ReduceOp::kAvg);
  return mean.item<double>();
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

double GptTrainer::step_local(const torch::Tensor& local) {
  const auto start = Clock::now();
  phases_ = StepPhases();
  for (auto& ddp : ddp_) ddp->zero_grad();
  StageFunctions stage = stage_functions(local);
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
  stage.before_backward = [&](int chunk, int, bool last) {
    ddp_[static_cast<size_t>(chunk)]->set_sync(last);
  };
  const double loss = executor_->run(schedule_, stage);
  phases_.backward = seconds_since(start) - phases_.forward;
  phases_.backward_end = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  auto t = Clock::now();
  phases_.ddp_wait = finalize_model_grads(grads_);
  phases_.clip = seconds_since(t) - phases_.ddp_wait;
  t = Clock::now();
  grad_norm_ = optimizer_->step(config_.train.clip_grad);
  phases_.optimizer = seconds_since(t);
  t = Clock::now();
  torch::Tensor mean = torch::tensor({loss}, torch::kDouble);
  context_.dp().all_reduce(mean, ReduceOp::kAvg);
  phases_.loss_sync = seconds_since(t);
  phases_.total = seconds_since(start);
  return mean.item<double>();
}

CheckpointContents GptTrainer::checkpoint_contents() {
  std::vector<NamedTensors> state = optimizer_->state_by_parameter();  // collective (ZeRO-1)
  CheckpointContents out;
  for (size_t k = 0; k < params_.size(); ++k) {
    out.tensors.emplace_back(params_[k].name, params_[k].tensor.detach());
    for (auto& named : state[k]) out.tensors.push_back(std::move(named));
  }
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const int chunk = static_cast<int>(c);
    const auto streams = chunks_[c]->dropout().state();
    out.tensors.emplace_back(StateName::of_rng(chunk, "dropout_shared").str(), streams[0]);
    out.tensors.emplace_back(StateName::of_rng(chunk, "dropout_tp_local").str(), streams[1]);
    const auto table = parameter_table(chunks_[c], schedule_.stage_of(context_.pp_rank(), chunk));
    out.parameters.insert(out.parameters.end(), table.begin(), table.end());
  }
  return out;
}

void GptTrainer::load_state_tensors(const std::map<std::string, torch::Tensor>& tensors) {
  const auto get = [&](const std::string& name) -> const torch::Tensor* {
    const auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  };
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : params_) {
      const torch::Tensor* value = get(p.name);
      if (value == nullptr) throw Error(str("checkpoint has no tensor ", p.name));
      TRIAX_CHECK(value->sizes() == p.tensor.sizes(), "checkpoint tensor ", p.name, " has shape ",
                  value->sizes(), ", the model ", p.tensor.sizes());
      p.tensor.copy_(*value);
    }
  }
  optimizer_->load_state(tensors);
  for (size_t c = 0; c < chunks_.size(); ++c) {  // absent in imported or resharded checkpoints
    const int chunk = static_cast<int>(c);
    const torch::Tensor* shared = get(StateName::of_rng(chunk, "dropout_shared").str());
    const torch::Tensor* local = get(StateName::of_rng(chunk, "dropout_tp_local").str());
    if (shared != nullptr && local != nullptr) chunks_[c]->dropout().set_state({*shared, *local});
  }
}

}  // namespace triax
