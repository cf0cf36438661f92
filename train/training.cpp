#include "train/training.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "checkpoint/background_save.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/convert.h"
#include "checkpoint/redistribute.h"
#include "checkpoint/save_policy.h"
#include "core/bf16_matmul.h"
#include "core/compute_threads.h"
#include "core/error.h"
#include "core/fault_point.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/mixed_precision.h"
#include "core/run_paths.h"
#include "core/strings.h"
#include "core/timing.h"
#include "job/output_check.h"
#include "job/stop_signal.h"
#include "models/stage_balance.h"
#include "parallel/comm/gather_text.h"
#include "schedules/pipeline_trace.h"
#include "train/freeze.h"
#include "train/lr_schedule.h"
#include "train/matmul_peak.h"
#include "train/metrics_file.h"
#include "train/relayout.h"
#include "train/text_generator.h"

namespace triax {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Training::Training(const RunPlan& plan, ParallelContext& context, Clock::time_point process_start,
                   bool node_leader)
    : plan_(&plan),
      context_(&context),
      process_start_(process_start),
      node_leader_(node_leader),
      scheduled_(scheduled_layout_changes(plan.config)) {
  TRIAX_CHECK(plan.has_data, "Training needs a plan with its data open");
}

TrainingResult Training::run() {
  auto trainer = std::make_unique<Trainer>(*plan_, *context_);
  const int64_t start = load_checkpoint(*trainer);
  open_cache(*trainer, start);
  const int64_t total = plan_->data.total_steps;
  if (start >= total) {  // a requeued job that had already finished, or fewer steps configured
    log::info(str("nothing to train: the checkpoint is at step ", start, " and the run has ", total,
                  " steps (raise train.steps or train.epochs to continue)"));
    TrainingResult done;
    done.steps = start;
    return done;
  }
  StepReport report = start_report(*trainer, start);
  const TrainConfig& train = plan_->config.train;
  std::unique_ptr<BatchSource> batches = make_batch_source(*plan_, context_->dp_rank());
  const SavePolicy policy(plan_->config);
  auto saves = std::make_unique<BackgroundSave>(*context_, plan_->config);
  for (int64_t step = start; step < total; ++step) {
    flight::set_step(step + 1);
    inject_step_fault();  // tests only (Note [Fault injection])
    stall_point("step", step + 1);
    const Batch local = batches->train_batch(step);
    StepOutcome outcome;
    outcome.step = step + 1;
    outcome.lr = learning_rate(train, step, total);
    const bool last_step = outcome.step == total;
    // Asynchronous parameter servers: the workers meet (a collective) only where a log line, an
    // evaluation or a checkpoint needs them all, and at the end; a stop signal waits for the next.
    // At least every kMeetEvery steps, so that a stop signal is acted on within them.
    constexpr int64_t kMeetEvery = 50;
    const bool meeting = !trainer->asynchronous() || report.should_log(outcome.step) ||
                         evaluating(outcome.step) || policy.due(outcome.step, last_step, false) ||
                         last_step || outcome.step % kMeetEvery == 0;
    trainer->set_meeting(meeting);
    trainer->set_learning_rate(outcome.lr);
    trainer->set_tracing(tracing(outcome.step));
    const int64_t hits = prefix_cache_ ? prefix_cache_->hits() : 0;
    const int64_t misses = prefix_cache_ ? prefix_cache_->misses() : 0;
    const Clock::time_point begin = Clock::now();
    outcome.loss = trainer->step_local(local);
    outcome.seconds = seconds_since(begin);
    if (prefix_cache_) {
      const int64_t rows = prefix_cache_->hits() + prefix_cache_->misses() - hits - misses;
      if (rows > 0) {
        outcome.prefix_cached =
            static_cast<double>(prefix_cache_->hits() - hits) / static_cast<double>(rows);
        outcome.skipped_flops_per_unit = cached_flops_per_unit_ * *outcome.prefix_cached;
      }
    }
    outcome.grad_norm = trainer->last_grad_norm();
    if (!trainer->dropped_workers().empty()) {
      outcome.batch_fraction =
          static_cast<double>(context_->dp().size()) / static_cast<double>(context_->dp_size());
    }
    if (tracing(outcome.step)) write_trace(*trainer, outcome.step);  // gathers over pp
    if (evaluating(outcome.step)) {
      const Evaluation metric = evaluate(*trainer, *batches);
      outcome.metric = metric.mean;
      outcome.metric_samples = metric.samples;
    }
    const bool logging = report.should_log(outcome.step);
    report.record(outcome,
                  logging ? gather_peak_memory_mib(context_->world()) : std::vector<double>{});
    if (freeze_statistic_wanted()) {
      const std::vector<double> norms = trainer->layer_gradient_norms();  // over model-parallel
      layer_norms_.resize(norms.size(), 0.0);
      for (size_t l = 0; l < norms.size(); ++l) layer_norms_[l] += norms[l];
      ++window_steps_;
    }
    // One agreement on a stop signal and on a change requested through run.dir.
    bool requested = request_seen();
    const int signal = meeting ? agree_on_stop_signal(context_->world(), &requested) : 0;
    saves->poll();
    const bool last = outcome.step == total;
    // A change comes before the step's save, so a checkpoint of a change step is on the new
    // layout: it resumes where the run went on (relayout.steps, the freeze's frozen layers).
    if (!last) {
      if (std::optional<Relayout> change = due_change(outcome.step, requested)) {
        change_layout(*change, trainer, batches, saves, report);
      }
    }
    if (policy.due(outcome.step, last, signal != 0)) {
      save(*trainer, *saves, outcome.step, last || signal != 0);
    }
    if (signal != 0) {
      saves->finish();
      return report.stopped(outcome.step, signal);
    }
  }
  saves->finish();
  TrainingResult result = report.finish();
  if (trainer->spec().generates_text) result.sample = write_sample(*trainer);
  return result;
}

bool Training::request_seen() const {
  const Config& c = plan_->config;
  // Parameter servers are placed for the whole run (train/run_plan.cpp refuses other changes).
  if (!c.relayout.on_request || context_->rank() != 0 || c.ddp.mode == DpMode::kParameterServer) {
    return false;
  }
  const RunPaths paths(c.run.dir);
  return paths.enabled() && std::filesystem::exists(paths.relayout_request());
}

std::optional<Training::Relayout> Training::due_change(int64_t step, bool requested) {
  // The freeze's decision is taken at its steps whatever else is due (its window restarts);
  // another change due with it keeps its layout and takes the frozen layers along.
  const std::optional<int64_t> frozen = freeze_decision(step);
  std::optional<LayoutChange> change;
  for (const LayoutChange& scheduled : scheduled_) {
    if (scheduled.step == step) change = scheduled;
  }
  if (!change && requested) change = requested_change(step);
  if (change && frozen) change->frozen_layers = *frozen;
  if (!change && frozen) change = auto_pipe(*plan_, *frozen, step);
  if (!change) return std::nullopt;
  return Relayout{*change, plan_run(apply_layout_change(*plan_, *change), context_->world_size(),
                                    DataCheck::kSkip)};
}

std::optional<LayoutChange> Training::requested_change(int64_t step) {
  // Rank 0 read the file; every rank parses and plans the same text, so all reach one verdict.
  const std::string path = RunPaths(plan_->config.run.dir).relayout_request();
  std::string text;
  if (context_->rank() == 0) {
    std::ifstream file(path);
    std::stringstream content;
    content << file.rdbuf();
    text = content.str();
  }
  text = all_gather_text(context_->world(), text).front();
  namespace fs = std::filesystem;
  std::error_code ignored;  // rank 0 alone renames: a failure must not part it from the others
  try {
    LayoutChange change = parse_layout_request(text, step, path);
    plan_run(apply_layout_change(*plan_, change), context_->world_size(), DataCheck::kSkip);
    if (context_->rank() == 0) fs::rename(path, path + ".done", ignored);
    return change;
  } catch (const Error& e) {  // the same text on every rank: the same verdict
    if (context_->rank() == 0) {
      log::warn(str("layout change requested after step ", step, " refused; training goes on at ",
                    layout_name(*plan_), ": ", e.what(), " (the request is kept as ", path,
                    ".rejected)"));
      fs::rename(path, path + ".rejected", ignored);
    }
    return std::nullopt;
  }
}

bool Training::more_may_freeze() const {
  // With every norm equal the rule freezes at least one more layer, unless the cap forbids it.
  const Config& c = plan_->config;
  return frozen_after(c.freeze, c.model.layers, c.train.frozen_layers,
                      std::vector<double>(static_cast<size_t>(c.model.layers), 0.0)) >
         c.train.frozen_layers;
}

bool Training::freeze_statistic_wanted() const {
  const Config& c = plan_->config;
  return c.freeze.every > 0 && c.freeze.criterion == FreezeCriterion::kGradientNorm &&
         more_may_freeze();
}

std::optional<int64_t> Training::freeze_decision(int64_t step) {
  const Config& c = plan_->config;
  const FreezeConfig& freeze = c.freeze;
  // Decisions at start, start + every, ...; the window also restarts every `every` steps before.
  if (freeze.every <= 0 || (step - freeze.start) % freeze.every != 0) return std::nullopt;
  const std::vector<double> window = layer_norms_;
  const int64_t window_steps = window_steps_;     // `every`, or fewer: a start before it, a resume
  layer_norms_.assign(layer_norms_.size(), 0.0);  // each decision sees the `every` steps before it
  window_steps_ = 0;
  if (step < freeze.start) return std::nullopt;
  const int64_t frozen = c.train.frozen_layers;
  // At the cap there is no decision to take or print (every rank knows it alike).
  if (!more_may_freeze()) return std::nullopt;
  int64_t next = frozen_after(freeze, c.model.layers, frozen, window);
  // Rank 0's verdict for all (every rank computed it from the same norms; one reduction makes
  // agreement certain).
  torch::Tensor verdict =
      torch::tensor({context_->rank() == 0 ? static_cast<double>(next) : 0.0}, torch::kDouble);
  context_->world().all_reduce(verdict, ReduceOp::kMax);
  next = static_cast<int64_t>(verdict.item<double>());
  if (freeze.criterion == FreezeCriterion::kGradientNorm && !window.empty()) {
    std::vector<std::string> shown;
    for (double n : window) shown.push_back(fixed(n, 4));
    log::info(str("freeze after step ", step, ": gradient norm per layer over the last ",
                  window_steps, " step(s) [", join(shown, ", "), "]; ", next, " of ",
                  c.model.layers, " layer(s) frozen (was ", frozen, ")"));
  } else {
    log::info(str("freeze after step ", step, ": ", next, " of ", c.model.layers,
                  " layer(s) frozen (was ", frozen, ")"));
  }
  if (next <= frozen) return std::nullopt;
  return next;
}

void Training::change_layout(Relayout& change, std::unique_ptr<Trainer>& trainer,
                             std::unique_ptr<BatchSource>& batches,
                             std::unique_ptr<BackgroundSave>& saves, StepReport& report) {
  const Clock::time_point begin = Clock::now();
  const int64_t step = change.change.step;
  saves->finish();  // a background save of the old layout completes on it
  const std::string from = layout_name(*plan_);
  FullModelState state =
      gather_full_state(*context_, plan_->config, step, trainer->checkpoint_contents());
  const double gathered = seconds_since(begin);
  // The old layout's pieces go before the new ones are built: at most one model per rank, beside
  // the gathered state.
  saves.reset();
  batches.reset();
  trainer.reset();
  prefix_cache_.reset();  // (after the trainer that points at it)
  auto plan = std::make_unique<RunPlan>(std::move(change.plan));
  // The datasets stay open: what they allow depends on the global batch, which is kept.
  plan->has_data = plan_->has_data;
  plan->data_note = plan_->data_note;
  plan->data = plan_->data;
  plan->corpus = plan_->corpus;
  plan->images = plan_->images;
  plan->test_images = plan_->test_images;
  // The groups are kept where only the split or the frozen layers change (a freeze in place).
  const ParallelLayout& was = context_->layout();
  const ParallelLayout& to = plan->layout;
  const bool same_groups = was.order() == to.order() && was.tp_size() == to.tp_size() &&
                           was.dp_size() == to.dp_size() && was.pp_size() == to.pp_size() &&
                           was.cp_size() == to.cp_size() &&
                           context_->dp_gradient_mode() == plan->config.ddp.hierarchical;
  if (!same_groups) {
    auto context =
        std::make_unique<ParallelContext>(*context_, plan->layout, plan->config.ddp.hierarchical);
    owned_context_ = std::move(context);  // the previous one's groups are freed here
    context_ = owned_context_.get();
    log::set_prefix(context_->prefix());
  }
  plans_.push_back(std::move(plan));
  plan_ = plans_.back().get();
  const double grouped = seconds_since(begin);
  // Every rank loads the same state next: no broadcast of the new weights.
  trainer = std::make_unique<Trainer>(*plan_, *context_, TrainerWeights::kLoadedNext);
  const double built = seconds_since(begin);
  std::map<std::string, torch::Tensor> shard;
  // The new chunks' names, shapes and splits are the shard's (ZeRO-3's hold slices only: a cut
  // builds its own); the load copies the views.
  const bool whole = shard_level(plan_->config) != ShardLevel::kParameters;
  std::vector<const torch::nn::Module*> chunks;
  for (const auto& chunk : trainer->chunks()) chunks.push_back(&chunk->module());
  for (auto& [name, tensor] :
       whole ? shard_views(StateSource(state), chunks, context_->tp_rank(), context_->tp_size())
             : cut_shard(plan_->config, StateSource(state), context_->pp_rank(),
                         context_->tp_rank(), nullptr)) {
    shard.emplace(name, std::move(tensor));
  }
  trainer->load_state_tensors(shard);
  // The gathered state (and on one node the shared segments it views) goes now that it is copied.
  shard.clear();
  state.tensors.clear();
  const double loaded = seconds_since(begin);
  open_cache(*trainer, step);
  batches = make_batch_source(*plan_, context_->dp_rank());
  saves = std::make_unique<BackgroundSave>(*context_, plan_->config);
  const double opened = seconds_since(begin);
  context_->world().barrier();
  RelayoutEvent event;
  event.step = step;
  event.from = from;
  event.to = layout_name(*plan_);
  event.trigger = change.change.trigger;
  event.seconds = seconds_since(begin);
  log::info(str("layout changed after step ", step, " (", event.trigger, ") in ",
                fixed(event.seconds, 3), " s (state gathered ", fixed(gathered, 3), ", groups ",
                fixed(grouped - gathered, 3), ", model ", fixed(built - grouped, 3), ", state cut ",
                fixed(loaded - built, 3), ", data and cache ", fixed(opened - loaded, 3), ", wait ",
                fixed(event.seconds - opened, 3), " s): ", event.from, " -> ", event.to, "\n",
                context_->table()));
  if (change.change.trigger == RunPaths(plan_->config.run.dir).relayout_request()) {
    log::info(str("a layout changed on request: to resume from a later checkpoint, add ",
                  resume_hint(*plan_), " (or list the change in relayout.steps)"));
  }
  report.record_relayout(event, plan_->config);
}

void Training::open_cache(Trainer& trainer, int64_t step) {
  prefix_cache_ = open_prefix_cache(*plan_, *context_, step, trainer.prefix_layers(),
                                    trainer.prefix_parameters());
  trainer.attach_prefix_cache(prefix_cache_.get());
  // A cached row skips its frozen layers' forward: a third of each one's training FLOPs.
  const StageCosts costs = stage_costs(plan_->config.model, trainer.spec().flops_per_unit);
  cached_flops_per_unit_ = static_cast<double>(trainer.prefix_layers()) * costs.layer / 3.0;
}

int64_t Training::load_checkpoint(Trainer& trainer) {
  if (!resume_) return 0;
  const Clock::time_point start = Clock::now();
  trainer.load_state_tensors(
      load_checkpoint_shard(*resume_, context_->pp_rank(), context_->tp_rank()));
  context_->world().barrier();
  // data_written_at is 0 for checkpoints made by `triax reshard`/`import`, not by a run.
  const std::string origin = resume_->data_written_at > 0
                                 ? str("written at dp ", resume_->data_written_at)
                                 : std::string("converted offline");
  log::info(str("resumed from ", resume_->dir, " after step ", resume_->step, " (",
                resume_->consumed_samples, " samples; ", origin, ", now dp ", context_->dp_size(),
                ") in ", fixed(seconds_since(start), 2), " s"));
  return resume_->step;
}

StepReport Training::start_report(Trainer& trainer, int64_t start_step) {
  const double peak = peak_flops(trainer.device());
  const ModelSpec& spec = trainer.spec();
  const double flops_per_unit = spec.flops_per_unit(plan_->config.model);
  const std::string unit = std::string(spec.unit).substr(0, std::string(spec.unit).size() - 1);
  const DataPlan& data = plan_->data;
  const Schedule& schedule = trainer.schedule();
  log::info(str(spec.name, ": ", trainer.model_parameters(), " parameters, ",
                fixed(flops_per_unit / 1e6, 2), " MFLOP per ", unit, " (", spec.flops_rule, "); ",
                plan_->batch.describe(), "; schedule ", schedule.name, " (", schedule.microbatches,
                " micro-batches, ", schedule.chunks, " chunk(s) per rank)"));
  log::info(plan_->numerics_guarantee());
  if (const int64_t frozen = plan_->config.train.frozen_layers; frozen > 0) {
    log::info(str("frozen: layers 0 .. ", frozen - 1, " of ", plan_->config.model.layers,
                  " and the embedding take no part in training (train.frozen_layers ", frozen,
                  ")"));
  }
  const ShardLevel level = shard_level(plan_->config);
  if (level != ShardLevel::kNone) {
    const int64_t group = plan_->config.optimizer.shard_group;
    // Over dp, or dp x cp under context parallelism (the ranks with the same weights).
    const int replicas = context_->replica().size();
    const int shards = group > 0 ? static_cast<int>(group) : replicas;
    const double mib = 1024.0 * 1024.0;
    // Under layout-invariant numerics ZeRO-2 reduces as ZeRO-1 (the micro-batch tree needs whole
    // gradients): the line says what runs.
    const bool as_zero1 = level == ShardLevel::kGradients &&
                          plan_->config.train.numerics == Numerics::kLayoutInvariant;
    const int stage = level == ShardLevel::kParameters               ? 3
                      : level == ShardLevel::kGradients && !as_zero1 ? 2
                                                                     : 1;
    const bool bf16_weights = plan_->config.train.param_dtype == Precision::kBf16;
    log::info(str("sharded data parallelism: ddp.shard ", level, " (ZeRO-", stage,
                  as_zero1 ? ": layout-invariant numerics reduce whole gradients" : "", ") over ",
                  shards, context_->cp_size() > 1 ? " dp x cp rank(s)" : " dp rank(s)",
                  shards < replicas ? str(", replicated ", replicas / shards, " times (hybrid)")
                                    : std::string(),
                  "; rank 0 holds ",
                  fixed(static_cast<double>(trainer.optimizer_state_bytes()) / mib, 1),
                  bf16_weights ? " MiB of AdamW's state with the fp32 master weights, "
                               : " MiB of AdamW's state, ",
                  fixed(static_cast<double>(trainer.gradient_bytes()) / mib, 1),
                  " MiB of gradient buffers and ",
                  fixed(static_cast<double>(trainer.parameter_bytes()) / mib, 1),
                  bf16_weights ? " MiB of bf16 working weights between steps"
                               : " MiB of parameters between steps"));
  }
  const int64_t units = spec.units_per_sample(plan_->config.model);
  log::info(str("data: ", data.train_samples, " training samples",
                units > 1 ? str(" of ", units, " ", spec.unit) : std::string(), " (",
                data.steps_per_epoch, " steps per epoch), ", data.val_samples, " for ",
                spec.metric_name, "; ", data.total_steps, " steps; MFU against a peak of ",
                fixed(peak / 1e12, 3), " TFLOP/s (",
                plan_->config.run.peak_tflops > 0 ? std::string("run.peak_tflops x ranks")
                : trainer.device().is_cuda() ? str(MixedPrecision(plan_->config).describe(true),
                                                   " matmul measured on ", trainer.device().str())
                                             : str(MixedPrecision(plan_->config).describe(),
                                                   " matmul measured on all cores of each node"),
                ")"));
  std::ofstream metrics;
  const RunPaths paths(plan_->config.run.dir);
  const std::string path = paths.metrics();
  if (paths.enabled() && context_->rank() == 0) {
    metrics = open_metrics_file(path, resume_ ? start_step : -1);
  }
  return StepReport(*plan_, spec, start_step, peak, process_start_, std::move(metrics), path);
}

double Training::peak_flops(const torch::Device& device) {
  const RunConfig& run = plan_->config.run;
  if (run.peak_tflops > 0) return run.peak_tflops * 1e12 * context_->world().size();
  // One rank per node measures with all of the node's cores while the others wait, so the sum
  // over nodes is the hardware's peak however many ranks share it.
  // The others sleep rather than poll meanwhile: a polling rank would take the cores measured.
  context_->world().barrier();
  double mine = 0;
  if (node_leader_) {
    const int threads = torch::get_num_threads();
    set_compute_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    mine = measure_matmul_tflops(MixedPrecision(plan_->config), device) * 1e12;
    set_compute_threads(threads);
    context_->world().barrier();
  } else {
    const WorkPtr done = context_->world().barrier_async();
    const Clock::time_point start = Clock::now();
    while (!done->is_completed()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (seconds_since(start) > Communicator::timeout()) done->wait();  // the watchdog's error
    }
  }
  torch::Tensor total = torch::tensor({mine}, torch::kDouble);
  context_->world().all_reduce(total, ReduceOp::kSum);
  return total.item<double>();
}

bool Training::tracing(int64_t step) const {
  return !plan_->config.schedule.trace.empty() && step == plan_->config.schedule.trace_step;
}

bool Training::evaluating(int64_t step) const {
  const int64_t every = plan_->config.train.eval_every;
  return step == plan_->data.total_steps || (every > 0 && step % every == 0);
}

void Training::write_trace(Trainer& trainer, int64_t step) {
  trainer.set_tracing(false);
  const PipelineTrace trace = gather_trace(context_->pp(), trainer.trace());
  if (context_->rank() != 0) return;
  const std::string& path = plan_->config.schedule.trace;
  std::ofstream file(path);
  file << chrome_trace_json(trace, str("triax ", trainer.schedule().name, " step ", step));
  check_written(file, path, "the pipeline trace (schedule.trace)");
  log::info(str("pipeline trace of step ", step, " written to ", path, " (measured bubble ",
                fixed(measured_bubble(trace), 3), "; open it in https://ui.perfetto.dev)"));
}

// The spec's metric over one evaluation's batches (train/batch_source.h: the same samples every
// time, so evaluations are comparable across a run and across layouts), averaged over every
// rank's samples (Trainer::evaluation_mean: in layout-invariant numerics, in the canonical order).
Training::Evaluation Training::evaluate(Trainer& trainer, BatchSource& batches) {
  std::vector<EvalSum> parts;
  for (int64_t k = 0; k < batches.eval_batches(); ++k) {
    const EvalBatch batch = batches.eval_batch(k);
    parts.push_back(trainer.evaluate_rows(batch.batch, batch.microbatches));
  }
  // A dropped worker's share of the held-out set: the survivor at its index (mod the survivors)
  // among the dropped scores it, so every evaluation still covers the same samples.
  const std::vector<int>& dropped = trainer.dropped_workers();
  std::vector<int> survivors;
  for (int d = 0; d < context_->dp_size(); ++d) {
    if (std::find(dropped.begin(), dropped.end(), d) == dropped.end()) survivors.push_back(d);
  }
  for (size_t k = 0; k < dropped.size(); ++k) {
    if (survivors[k % survivors.size()] != context_->dp_rank()) continue;
    std::unique_ptr<BatchSource>& share = adopted_[dropped[k]];
    if (!share) share = make_batch_source(*plan_, dropped[k]);
    for (int64_t b = 0; b < share->eval_batches(); ++b) {
      const EvalBatch batch = share->eval_batch(b);
      parts.push_back(trainer.evaluate_rows(batch.batch, batch.microbatches));
    }
  }
  const EvalMean all = trainer.evaluation_mean(parts, batches.eval_in_blocks());
  const int64_t samples = static_cast<int64_t>(std::llround(all.samples));
  if (!dropped.empty() && adopted_logged_ < dropped.size()) {
    adopted_logged_ = dropped.size();
    log::info(str("evaluation without the dropped worker(s): ", samples,
                  " held-out samples scored (their shares by the others)"));
  }
  return Evaluation{all.mean, samples};
}

void Training::save(Trainer& trainer, BackgroundSave& saves, int64_t step, bool wait) {
  const Clock::time_point start = Clock::now();
  const CheckpointLayout layout{trainer.schedule().chunks, plan_->batch.global_batch};
  // Every rank builds the contents (a sharded optimizer streams its slices over dp, a bucket at
  // a time); dp rank 0 writes them.
  CheckpointContents contents = trainer.checkpoint_contents(saves.background(wait));
  const std::string dir = saves.save(
      step, layout, [&] { return std::move(contents); }, wait);
  if (saves.in_flight()) return;  // BackgroundSave reports when it is written
  log::info(str("checkpoint of step ", step, " saved to ", dir, " in ",
                fixed(seconds_since(start), 2), " s"));
}

std::string Training::write_sample(Trainer& trainer) {
  const SampleConfig& sample = plan_->config.sample;
  if (sample.tokens <= 0) return "";
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(plan_->config.data.tokenizer);
  const std::string text = generate_text(trainer, *context_, plan_->config, *tokenizer);
  const std::string how = sample.top_k <= 1
                              ? std::string("greedy")
                              : str("top-k ", sample.top_k, ", temperature ", sample.temperature);
  log::info(str("sample (", how, ", ", sample.tokens, " tokens after the prompt):\n",
                printable(text), "\n--- end of sample"));
  const RunPaths paths(plan_->config.run.dir);
  if (paths.enabled() && context_->rank() == 0) {
    const std::string path = paths.sample();
    std::ofstream file(path);
    file << text << "\n";
    check_written(file, path, "the sample (run.dir)");
  }
  return text;
}

}  // namespace triax
