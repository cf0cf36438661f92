// defines: triax::Trainer, triax::StepPhases, triax::EvalSum
//
// One optimizer step of any model family (models/model_spec.h) with all three axes composed, on
// one rank:
//   this dp rank's share of the global batch -> micro-batches -> the pipeline schedule over this
//   rank's chunks (each tp-sharded; the spec builds them) -> per-chunk bucketed DDP over the dp
//   group, syncing during each chunk's last backward -> finalize_model_grads (dp sync, sequence-
//   parallel and tied-weight sums, in that order: train/finalize_grads.h) -> the run's Optimizer
//   (global-norm clipping and the update: train/optim/optimizer.h).
// The loss returned is the mean over the global batch, the same on every rank. Everything comes
// from the run's plan (train/run_plan.h): the batch plan, the schedule, the stage split and the
// activation shapes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "models/model_spec.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/ordered_grad_norm.h"
#include "parallel/parallel_context.h"
#include "parallel/tp/shard_spec.h"
#include "schedules/pipeline_executor.h"
#include "train/batch_plan.h"
#include "train/finalize_grads.h"
#include "train/optim/optimizer.h"
#include "train/run_plan.h"

namespace triax {

/// Where one step's time went on this rank, in seconds (steady clock; always measured: a few
/// clock reads per micro-batch). forward includes the loss; backward is the rest of the pipeline
/// schedule (backwards, gradient hooks, waits on pipeline neighbours); ddp_wait is the
/// data-parallel communication not hidden behind backward; clip covers the other gradient
/// fix-ups of finalize_model_grads (sequence-parallel and tied-weight sums); optimizer the
/// Optimizer's step (global norm, clipping, update; ZeRO-1's all-gather); loss_sync the loss's
/// all-reduce over dp.
struct StepPhases {
  double forward = 0;
  double backward = 0;
  double ddp_wait = 0;
  double clip = 0;
  double optimizer = 0;
  double loss_sync = 0;
  double total = 0;
  /// When this rank's backward ended (steady clock, seconds): on one host, ranks' values compare,
  /// so their spread is how long the first rank to finish waits for the last (benchmarks).
  double backward_end = 0;
};

/// An evaluation's running sum on one rank: the metric times the samples it covers, and those
/// samples (the mean over ranks and batches is sum / samples); and each micro-batch's metric, in
/// order (what layout-invariant numerics sum).
struct EvalSum {
  double sum = 0;
  double samples = 0;
  std::vector<double>
      microbatches;  ///< each micro-batch's metric (each sample's: Note [Sample units])
};

/// One evaluation over every rank: the metric's mean and the samples it covers.
struct EvalMean {
  double mean = 0;
  double samples = 0;
};

/// Where a new Trainer's weights come from.
enum class TrainerWeights {
  kInitialised,  ///< the seed's initialisation, broadcast over dp (every rank starts alike)
  kLoadedNext,   ///< load_state_tensors with the same tensors on every dp rank comes next (a
                 ///< re-layout): the broadcast, a collective per parameter, is skipped (except
                 ///< under ZeRO-3, which cuts its slices there)
};

class Trainer {
 public:
  /// Builds this rank's chunks (same weights as one process), broadcasts them over dp unless
  /// `weights` says a load follows.
  Trainer(const RunPlan& plan, ParallelContext& context,
          TrainerWeights weights = TrainerWeights::kInitialised);

  /// One step on the global batch (identical on every rank; this rank takes its rows, as the
  /// distributed sampler deals them). Returns the global mean loss.
  double step(const Batch& global);
  /// The same from this dp rank's share only: [global_batch / dp] rows.
  double step_local(const Batch& local);
  /// This rank's metric over `local`, cut into `microbatches` equal micro-batches, forward only,
  /// without dropout, changing nothing; no communication beyond the pipeline's.
  EvalSum evaluate_rows(const Batch& local, int microbatches);
  /// The metric's mean over the global batch whose share is `local` (as step_local; a
  /// collective over dp).
  double evaluate_local(const Batch& local);
  /// The mean over every rank's parts of one evaluation (a collective over dp). `in_blocks`: each
  /// rank's part k is its contiguous block of evaluation batch k, in equal micro-batches on every
  /// rank; then layout-invariant numerics sum every micro-batch's (or sample's, under
  /// train.micro_batch_invariant) metric in global order (batch, rank, micro-batch) by the tree
  /// and divide once, so the figure does not depend on dp or pp.
  /// Otherwise the parts' sums are added and all-reduced.
  EvalMean evaluation_mean(const std::vector<EvalSum>& parts, bool in_blocks);
  /// The learning rate of the following steps (the LR schedule's value).
  void set_learning_rate(double lr) { optimizer_->set_learning_rate(lr); }
  /// Asynchronous parameter servers (parameter_server.staleness > 0): whether the workers meet at
  /// the coming step (all start the next one from the same weights, and the loss is the global
  /// batch's); between meetings each worker goes at its own pace and reports its own loss.
  void set_meeting(bool meet);
  /// Whether steps between meetings run without any collective among the workers.
  bool asynchronous() const;
  /// Asynchronous parameter servers: the workers (dp ranks) dropped so far, as the last meeting
  /// heard (the context's world and dp group are the others': ParallelContext::drop_data_ranks).
  const std::vector<int>& dropped_workers() const { return dropped_; }
  /// Record each pipeline action's timing in the following steps (schedule.trace).
  void set_tracing(bool on) { executor_->set_tracing(on); }
  const std::vector<TraceEvent>& trace() const { return executor_->trace(); }
  /// Heap growth during the last traced step: the activations this rank held at its peak.
  int64_t peak_activation_bytes() const { return executor_->peak_activation_bytes(); }

  double last_grad_norm() const { return grad_norm_; }
  const StepPhases& last_phases() const { return phases_; }
  std::vector<std::unique_ptr<ModelChunk>>& chunks() { return chunks_; }
  const ModelSpec& spec() const { return spec_; }
  /// Where this rank's chunks, batches and optimizer state live (run.device).
  const torch::Device& device() const { return device_; }
  const Schedule& schedule() const { return schedule_; }
  const BatchPlan& plan() const { return plan_; }
  /// This rank's parameters, optimizer state and random-stream positions, by checkpoint name
  /// (checkpoint/state_name.h), with its chunks' parameter table. Call on every rank: with a
  /// sharded optimizer the state (and sliced values) come as a stream that gathers them over dp
  /// one bucket at a time (materialize() for all at once). `background`: for a save on another
  /// thread (the stream works on copies, over its own communicator).
  CheckpointContents checkpoint_contents(bool background = false);
  /// Restores what checkpoint_contents() gave (names checked; throws naming a missing one).
  void load_state_tensors(const std::map<std::string, torch::Tensor>& tensors);
  /// Bytes of optimizer state this rank holds (its slices with ddp.shard).
  int64_t optimizer_state_bytes() const { return optimizer_->state_bytes(); }
  /// Bytes of gradient buffers this rank holds now, and at most during the last step
  /// (GradientSync::gradient_bytes): ZeRO-2 keeps only its slices between steps.
  int64_t gradient_bytes() const;
  int64_t peak_gradient_bytes() const;
  /// Bytes of parameters this rank holds now (ZeRO-3: its slices and any gathered unit; else the
  /// whole parameters of its chunks), and the most during the last step (ZeRO-3's gathered units).
  int64_t parameter_bytes() const;
  int64_t peak_parameter_bytes() const;
  /// Runs `use` with every chunk's parameters whole (ZeRO-3 gathers them, collective over the
  /// shard group, and frees them after, keeping what `use` wrote; from chunk `first`).
  void with_whole_parameters(const std::function<void()>& use, size_t first = 0);
  /// ZeRO-3: seconds the last step's forward and backward waited for all-gathers.
  double gather_wait_seconds() const;
  /// Parameters of the whole model (all tp and pp ranks together, tied weights once).
  int64_t model_parameters() const { return model_parameters_; }
  /// train.frozen_layers: the first layers and the embedding take no part in training.
  int64_t frozen_layers() const { return config_.train.frozen_layers; }
  /// AutoCache: the frozen layers stage 0 holds (0 on other pipeline ranks): what its cached rows
  /// have been through.
  int64_t prefix_layers() const;
  /// The parameters those rows depend on: stage 0's frozen ones (the embedding, those layers),
  /// in a fixed order (empty on other pipeline ranks).
  const std::vector<torch::Tensor>& prefix_parameters() const { return prefix_params_; }
  /// AutoCache (train/prefix_cache.h): the first stage takes its frozen prefix's output from
  /// `cache` (null: none; it must outlive its use here). Other ranks ignore it.
  void attach_prefix_cache(PrefixCache* cache);
  /// Each layer's gradient norm after the last step (every layer of the model; frozen ones 0), the
  /// same on the ranks of a model-parallel group (a collective over it). The freeze algorithm's
  /// statistic: the gradients DDP left averaged in .grad (not under a sharded optimizer).
  std::vector<double> layer_gradient_norms();

 private:
  /// The executor's forward and loss over micro-batches of `local` (checked).
  StageFunctions stage_functions(const Batch& local, int microbatches, bool evaluating);
  /// This rank's context-parallel part of every sequence of `local` (all of it at cp 1).
  Batch context_part(const Batch& local) const;
  const Schedule& eval_schedule(int microbatches);
  /// The metric's mean over this rank's micro-batches of `local` (forward only).
  double evaluate_mean(const Batch& local, int microbatches);
  /// Whether parameter `name` of `chunk` (whose stage starts at layer `first_layer`) is frozen:
  /// the embedding and a tied copy of it, and blocks below train.frozen_layers.
  bool is_frozen(const ModelChunk& chunk, const std::string& name, const ParamTraits& traits,
                 int64_t first_layer) const;
  /// train.numerics: layout_invariant (docs/numerics.md).
  bool invariant() const { return config_.train.numerics == Numerics::kLayoutInvariant; }
  /// train.micro_batch_invariant: micro-batches run sample by sample, the samples the tree's
  /// leaves (Note [Sample units]).
  bool sample_units() const { return invariant() && config_.train.micro_batch_invariant; }
  /// The last step's loss over the global batch in layout-invariant order (collective over dp).
  double global_mean_loss();

  const ModelSpec& spec_;
  Config config_;
  torch::Device device_;
  ParallelContext& context_;
  BatchPlan plan_;
  Schedule schedule_;
  std::vector<std::unique_ptr<ModelChunk>> chunks_;
  // Hybrid sharding (optimizer.shard_group < dp): the groups the optimizer state is split over,
  // and the groups across which their slices are replicated. Declared before ddp_ and the
  // optimizer, which use them (so destroyed after them).
  std::unique_ptr<Communicator> shard_group_;
  std::unique_ptr<Communicator> checkpoint_group_;  ///< a background save's stream (ZeRO)
  /// One per chunk: ZeRO-2 issues a chunk's replica all-reduces as its reduce-scatters land, so
  /// two chunks' on one communicator could reach the ranks in different orders.
  std::vector<std::unique_ptr<Communicator>> replica_groups_;
  std::vector<std::unique_ptr<GradientSync>> ddp_;
  ModelGrads grads_;  ///< what finalize_model_grads acts on
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<OrderedGradNorm> ordered_norm_;  ///< layout-invariant numerics
  std::unique_ptr<PipelineExecutor> executor_;
  std::unique_ptr<PipelineExecutor> eval_executor_;  ///< when evaluation's activations differ
  std::vector<OptimizedParam> params_;
  std::vector<std::pair<int64_t, int64_t>> plan_stage_layers_;  ///< [first, last) per stage
  std::vector<OptimizedParam> frozen_;  ///< train.frozen_layers: not in params_, DDP or optimizer
  std::vector<std::pair<std::string, torch::Tensor>> frozen_state_;  ///< their optimizer state
  std::vector<torch::Tensor> prefix_params_;  ///< stage 0's frozen parameters (AutoCache)
  std::vector<bool> input_needs_grad_;        ///< by chunk
  /// layer_gradient_norms: each counted layer parameter and its layer (found at the first call).
  std::vector<std::pair<torch::Tensor, int64_t>> layer_params_;
  bool layer_params_found_ = false;
  std::map<int, Schedule> eval_schedules_;  ///< forward-only, by micro-batch count
  int64_t model_parameters_ = 0;
  double grad_norm_ = 0;
  bool meeting_ = true;
  std::vector<int> dropped_;
  /// At a meeting: the servers' list of dropped workers, taken into the context when it grew.
  void take_dropped_workers();
  StepPhases phases_;
};

}  // namespace triax
