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
#include "train/optimizer.h"

namespace triax {

GptTrainer::GptTrainer(const RunPlan& run, ParallelContext& context)
    : config_(run.config), context_(context), plan_(run.batch), schedule_(run.schedule) {
  TRIAX_CHECK(run.model == ModelKind::kGpt && run.layout.dp_size() == context.dp_size() &&
                  run.layout.tp_size() == context.tp_size() &&
                  run.layout.pp_size() == context.pp_size(),
              "GptTrainer: the plan is not a GPT plan for this context's layout");
  const int p = context_.pp_size();
  const int v = schedule_.chunks;
  GptOptions whole =
      GptOptions::from_config(config_.model, static_cast<uint64_t>(config_.train.seed));
  whole.recompute = config_.train.recompute;
  whole.recompute_layers = config_.train.recompute_layers;
  whole.sequence_parallel = config_.parallel.sequence;
  const auto& ranges = run.stage_layers;
  double counted_parameters = 0;
  for (int c = 0; c < v; ++c) {
    const int stage = c * p + context_.pp_rank();
    chunks_.emplace_back(gpt_stage_options(whole, stage, ranges), context_.tp());
    const auto specs = collect_shard_specs(*chunks_.back());
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : chunks_.back()->named_parameters()) {
      named.emplace_back(item.key(), item.value());
      params_.push_back(item.value());
      param_names_.push_back(StateName::of_parameter(c, item.key()).str());
      // Count each parameter of the whole model once in the gradient norm (see grad_norm.h).
      const bool sharded = specs.count(item.key()) != 0;
      const bool tied_copy = item.key() == "token_embedding.weight" && stage != 0;
      counted_in_norm_.push_back(!tied_copy && (sharded || context_.tp_rank() == 0));
      if (counted_in_norm_.back()) {
        const auto& value = item.value();
        counted_parameters += sharded ? static_cast<double>(value.numel()) *
                                            static_cast<double>(specs.at(item.key()).full_size) /
                                            static_cast<double>(specs.at(item.key()).padded_size)
                                      : static_cast<double>(value.numel());
      }
    }
    ddp_.push_back(make_gradient_sync(std::move(named),
                                      context_.dp_for_gradients(config_.ddp.hierarchical),
                                      config_.ddp, config_.optimizer.shard));
    ddp_.back()->broadcast_parameters();
  }
  optimizer_ = make_optimizer(config_.train, params_);
  if (config_.optimizer.shard) {
    std::vector<DistributedDataParallel*> ddps;
    std::vector<size_t> first;
    size_t offset = 0;
    for (size_t c = 0; c < ddp_.size(); ++c) {
      ddps.push_back(dynamic_cast<DistributedDataParallel*>(ddp_[c].get()));
      TRIAX_CHECK(ddps.back() != nullptr, "optimizer.shard needs bucketed DDP");
      first.push_back(offset);
      offset += chunks_[c]->parameters().size();
    }
    sharded_ = std::make_unique<ShardedAdamW>(ddps, first, params_, counted_in_norm_, config_.train,
                                              context_.dp(), context_.model_parallel());
  }
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
  triax::set_learning_rate(*optimizer_, lr);
  if (sharded_) sharded_->set_learning_rate(lr);
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

double GptTrainer::finish_step(double loss, Clock::time_point start) {
  const auto t = Clock::now();
  torch::Tensor mean = torch::tensor({loss}, torch::kDouble);
  context_.dp().all_reduce(mean, ReduceOp::kAvg);
  phases_.loss_sync = seconds_since(t);
  phases_.total = seconds_since(start);
  return mean.item<double>();
}

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
  if (sharded_) return finish_sharded_step(loss, start);
  for (auto& ddp : ddp_) {
    ddp->finish();
    phases_.ddp_wait += ddp->exposed_seconds();
  }
  auto t = Clock::now();
  // Sums over tp and averages over dp commute: after DDP is as good as before, and leaves
  // DDP's buckets untouched while their all-reduces are in flight.
  all_reduce_sequence_partial_grads(chunks_, context_.tp());
  all_reduce_tied_embedding_grads(chunks_, context_.embedding());
  std::vector<torch::Tensor> grads, counted;
  for (size_t k = 0; k < params_.size(); ++k) {
    grads.push_back(params_[k].grad());
    if (counted_in_norm_[k]) counted.push_back(params_[k].grad());
  }
  grad_norm_ = clip_grad_norm(grads, counted, config_.train.clip_grad, context_.model_parallel());
  phases_.clip = seconds_since(t);
  t = Clock::now();
  optimizer_->step();
  phases_.optimizer = seconds_since(t);
  return finish_step(loss, start);
}

double GptTrainer::finish_sharded_step(double loss, Clock::time_point start) {
  // The tied embedding's two copies are summed before the reduce-scatter: their slices need not
  // line up across the first and last stage's buckets.
  auto t = Clock::now();
  all_reduce_sequence_partial_grads(chunks_, context_.tp());
  all_reduce_tied_embedding_grads(chunks_, context_.embedding());
  phases_.clip = seconds_since(t);
  for (auto& ddp : ddp_) {
    ddp->finish();
    phases_.ddp_wait += ddp->exposed_seconds();
  }
  t = Clock::now();
  grad_norm_ = sharded_->clip_and_step(config_.train.clip_grad);  // norm, update, all-gather
  phases_.optimizer = seconds_since(t);
  return finish_step(loss, start);
}

int64_t GptTrainer::optimizer_state_bytes() const {
  if (sharded_) return sharded_->state_bytes();
  int64_t bytes = 0;
  for (const auto& [key, state] : optimizer_->state()) {
    if (auto* adam = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) {
      bytes += adam->exp_avg().nbytes() + adam->exp_avg_sq().nbytes();
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      bytes += sgd->momentum_buffer().nbytes();
    }
  }
  return bytes;
}

namespace {

std::string state_key(const torch::Tensor& p) {
  return c10::guts::to_string(p.unsafeGetTensorImpl());  // how LibTorch's optimizers key state
}

}  // namespace

CheckpointContents GptTrainer::checkpoint_contents() {
  if (sharded_) sharded_->export_state(*optimizer_);  // collective over dp
  CheckpointContents out;
  auto& state = optimizer_->state();
  const auto add = [&](const std::string& name, const std::string& kind, torch::Tensor value) {
    StateName key = StateName::parse(name);
    key.state = kind;
    out.tensors.emplace_back(key.str(), std::move(value));
  };
  for (size_t k = 0; k < params_.size(); ++k) {
    const std::string& name = param_names_[k];
    out.tensors.emplace_back(name, params_[k].detach());
    const auto it = state.find(state_key(params_[k]));
    if (it == state.end()) continue;  // before the first step
    if (auto* adam = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
      add(name, "exp_avg", adam->exp_avg());
      add(name, "exp_avg_sq", adam->exp_avg_sq());
      add(name, "step", torch::tensor({adam->step()}, torch::kLong));
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      add(name, "momentum", sgd->momentum_buffer());
    }
  }
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const int chunk = static_cast<int>(c);
    const auto streams = chunks_[c]->dropout().state();
    out.tensors.emplace_back(StateName::of_rng(chunk, "dropout_shared").str(), streams[0]);
    out.tensors.emplace_back(StateName::of_rng(chunk, "dropout_tp_local").str(), streams[1]);
    const auto table = parameter_table(chunks_[c], schedule_.stage_of(context_.pp_rank(), chunk));
    out.parameters.insert(out.parameters.end(), table.begin(), table.end());
  }
  // The gathered full moments live only as long as the contents: a sharded rank keeps 1/dp.
  if (sharded_) optimizer_->state().clear();
  return out;
}

void GptTrainer::load_state_tensors(const std::map<std::string, torch::Tensor>& tensors) {
  const auto get = [&](const std::string& name) -> const torch::Tensor* {
    const auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  };
  const auto get_state = [&](const std::string& name, const char* kind) {
    StateName key = StateName::parse(name);
    key.state = kind;
    return get(key.str());
  };
  auto& state = optimizer_->state();
  // State of the other optimizer kind would be cast to the wrong type inside step().
  const bool adamw = dynamic_cast<torch::optim::AdamW*>(optimizer_.get()) != nullptr;
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k) {
    const std::string& name = param_names_[k];
    const torch::Tensor* value = get(name);
    if (value == nullptr) throw Error(str("checkpoint has no tensor ", name));
    TRIAX_CHECK(value->sizes() == params_[k].sizes(), "checkpoint tensor ", name, " has shape ",
                value->sizes(), ", the model ", params_[k].sizes());
    params_[k].copy_(*value);
    state.erase(state_key(params_[k]));
    if (const torch::Tensor* avg = get_state(name, "exp_avg")) {
      if (!adamw)
        throw Error(
            str("checkpoint holds AdamW state for ", name, "; this run's optimizer is not AdamW"));
      auto restored = std::make_unique<torch::optim::AdamWParamState>();
      restored->exp_avg(avg->clone());
      const torch::Tensor* sq = get_state(name, "exp_avg_sq");
      const torch::Tensor* steps = get_state(name, "step");
      if (sq == nullptr || steps == nullptr)
        throw Error(str("checkpoint lacks AdamW state of ", name));
      restored->exp_avg_sq(sq->clone());
      restored->step(steps->item<int64_t>());
      state[state_key(params_[k])] = std::move(restored);
    } else if (const torch::Tensor* momentum = get_state(name, "momentum")) {
      if (adamw)
        throw Error(str("checkpoint holds SGD momentum for ", name, "; this run uses AdamW"));
      auto restored = std::make_unique<torch::optim::SGDParamState>();
      restored->momentum_buffer(momentum->clone());
      state[state_key(params_[k])] = std::move(restored);
    }
  }
  for (size_t c = 0; c < chunks_.size(); ++c) {  // absent in imported or resharded checkpoints
    const int chunk = static_cast<int>(c);
    const torch::Tensor* shared = get(StateName::of_rng(chunk, "dropout_shared").str());
    const torch::Tensor* local = get(StateName::of_rng(chunk, "dropout_tp_local").str());
    if (shared != nullptr && local != nullptr) chunks_[c]->dropout().set_state({*shared, *local});
  }
  if (sharded_) sharded_->import_state(*optimizer_);  // this rank's slices of the full state
}

}  // namespace triax
