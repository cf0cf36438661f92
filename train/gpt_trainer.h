// defines: triax::GptTrainer
//
// One optimizer step of the GPT with all three axes composed, on one rank:
//   this dp rank's share of the global batch -> micro-batches -> the pipeline schedule over this
//   rank's chunks (each tp-sharded) -> per-chunk bucketed DDP over the dp group, syncing during
//   each chunk's last backward -> tied-embedding gradient sum over the embedding group ->
//   global-norm clipping over the model-parallel group -> optimizer step.
// The loss returned is the mean over the global batch, the same on every rank. Everything comes
// from the run's plan (train/run_plan.h): the batch plan, the schedule and the stage split.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/config.h"
#include "models/gpt.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/parallel_context.h"
#include "schedules/pipeline_executor.h"
#include "train/batch_plan.h"
#include "train/run_plan.h"
#include "train/finalize_grads.h"
#include "train/optim/optimizer.h"

namespace triax {

/// Where one step's time went on this rank, in seconds (steady clock; always measured: a few
/// clock reads per micro-batch). forward includes the loss; backward is the rest of the pipeline
/// schedule (backwards, gradient hooks, waits on pipeline neighbours); ddp_wait is the
/// data-parallel communication not hidden behind backward; clip covers the other gradient
/// fix-ups of finalize_model_grads (sequence-parallel and tied-embedding sums); optimizer the
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

class GptTrainer {
 public:
  /// Builds this rank's chunks (same weights as one process), broadcasts them over dp.
  GptTrainer(const RunPlan& plan, ParallelContext& context);

  /// One step on `tokens` [global_batch, seq_len + 1] (identical on every rank: inputs are
  /// tokens[:, :-1], targets tokens[:, 1:]). Returns the global mean loss.
  double step(const torch::Tensor& tokens);
  /// The same from this dp rank's share only: [global_batch / dp, seq_len + 1], the rank's
  /// rows of the global batch (what the distributed sampler gives it: DistributedSampler::
  /// local_rows of the whole batch).
  double step_local(const torch::Tensor& local_tokens);
  /// Mean loss over the global batch whose share is `local_tokens` (as step_local), forward
  /// only, without dropout, changing nothing.
  double evaluate_local(const torch::Tensor& local_tokens);
  /// The learning rate of the following steps (the LR schedule's value).
  void set_learning_rate(double lr);
  /// Record each pipeline action's timing in the following steps (schedule.trace).
  void set_tracing(bool on) { executor_->set_tracing(on); }
  const std::vector<TraceEvent>& trace() const { return executor_->trace(); }

  double last_grad_norm() const { return grad_norm_; }
  double last_exposed_comm_seconds() const { return phases_.ddp_wait; }
  const StepPhases& last_phases() const { return phases_; }
  std::vector<Gpt>& chunks() { return chunks_; }
  const Schedule& schedule() const { return schedule_; }
  const BatchPlan& plan() const { return plan_; }
  /// This rank's parameters, optimizer state and dropout stream positions, by checkpoint name
  /// (checkpoint/state_name.h), with its chunks' parameter table. Call on every rank: with a
  /// sharded optimizer it gathers the state over dp.
  CheckpointContents checkpoint_contents();
  /// Restores what checkpoint_contents() gave (names checked; throws naming a missing one).
  void load_state_tensors(const std::map<std::string, torch::Tensor>& tensors);
  /// Bytes of optimizer state this rank holds (its slices with optimizer.shard).
  int64_t optimizer_state_bytes() const { return optimizer_->state_bytes(); }
  /// Parameters of the whole model (all tp and pp ranks together, tied weights once).
  int64_t model_parameters() const { return model_parameters_; }

 private:
  /// The executor's forward and loss over this rank's share `local` (checked).
  StageFunctions stage_functions(const torch::Tensor& local);

  Config config_;
  ParallelContext& context_;
  BatchPlan plan_;
  Schedule schedule_;
  std::vector<Gpt> chunks_;
  std::vector<std::unique_ptr<GradientSync>> ddp_;
  ModelGrads grads_;  ///< what finalize_model_grads acts on
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<PipelineExecutor> executor_;
  std::unique_ptr<PipelineExecutor> eval_executor_;  ///< sequence parallelism: whole sequences
  std::vector<OptimizedParam> params_;
  Schedule eval_schedule_;
  int64_t model_parameters_ = 0;
  double grad_norm_ = 0;
  StepPhases phases_;
};

}  // namespace triax
