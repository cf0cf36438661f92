// defines: triax::Training
//
// `triax train` for every model: the loop around the Trainer's step. Each step reads this dp
// rank's share of the next global batch (train/batch_source.h), sets the step's learning rate,
// runs the step, and then — each a component deciding for itself — writes the pipeline trace of
// one step, evaluates (the model spec's metric), reports (train/step_report.h), agrees with the
// other ranks on a stop signal, and saves a checkpoint when the policy says so
// (checkpoint/save_policy.h). It resumes from a checkpoint and, for a language model, ends with a
// sample of generated text. After the steps relayout.steps lists, or a request in run.dir, it
// changes the layout in memory and goes on (train/relayout.h, docs/relayout.md).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "checkpoint/background_save.h"
#include "checkpoint/manifest.h"
#include "parallel/parallel_context.h"
#include "train/batch_source.h"
#include "train/prefix_cache.h"
#include "train/relayout.h"
#include "train/run_plan.h"
#include "train/step_report.h"
#include "train/trainer.h"

namespace triax {

class Training {
 public:
  /// `plan`: with its data open. `process_start`: when the process began, for the
  /// time-to-first-step figure. `node_leader`: this rank measures its node's matmul peak for MFU
  /// (local rank 0).
  Training(const RunPlan& plan, ParallelContext& context,
           std::chrono::steady_clock::time_point process_start, bool node_leader);
  /// Continue from `checkpoint` (read and checked by read_checkpoint) instead of step 0.
  void resume_from(const Manifest& checkpoint) { resume_ = checkpoint; }
  TrainingResult run();

 private:
  int64_t load_checkpoint(Trainer& trainer);
  StepReport start_report(Trainer& trainer, int64_t start_step);
  /// MFU's denominator in FLOP/s, for the whole job (a collective), measured on `device` unless
  /// run.peak_tflops gives it.
  double peak_flops(const torch::Device& device);
  bool tracing(int64_t step) const;
  bool evaluating(int64_t step) const;
  void write_trace(Trainer& trainer, int64_t step);
  /// The spec's metric over one evaluation (a collective over dp).
  struct Evaluation {
    double mean = 0;
    int64_t samples = 0;
  };
  Evaluation evaluate(Trainer& trainer, BatchSource& batches);
  /// `wait`: synchronously even with checkpoint.async (a stop signal, the last step).
  void save(Trainer& trainer, BackgroundSave& saves, int64_t step, bool wait);
  std::string write_sample(Trainer& trainer);

  /// A change about to happen: what was asked and the plan of the layout after it.
  struct Relayout {
    LayoutChange change;
    RunPlan plan;
  };
  /// Rank 0: run.dir/relayout is there (relayout.on_request).
  bool request_seen() const;
  /// The change due after `step` (collective: every rank takes the same path): a scheduled one,
  /// else the request file's (`requested`: any rank saw it); the freeze's decision joins either,
  /// or alone becomes AutoPipe's change.
  std::optional<Relayout> due_change(int64_t step, bool requested);
  /// The request file's change when it parses and plans; a refused request is logged (rank 0
  /// renames the file) and training goes on. Collective: the text reaches every rank.
  std::optional<LayoutChange> requested_change(int64_t step);
  /// Whether the loop sums the layers' gradient norms: freeze.criterion gradient_norm, and more
  /// layers may still freeze.
  bool freeze_statistic_wanted() const;
  /// Whether freeze.max_fraction (and the one layer that always trains) lets another layer freeze.
  bool more_may_freeze() const;
  /// At a freeze decision step from freeze.start: the frozen-layer count, when it grows (rank
  /// 0's verdict, a collective over the world). Restarts the statistic's window every
  /// freeze.every steps (counted from freeze.start).
  std::optional<int64_t> freeze_decision(int64_t step);
  /// Carries a change out (collective): the state gathered in memory, the old layout's trainer,
  /// batches and saves replaced by the new layout's, which load their shard of the state.
  void change_layout(Relayout& change, std::unique_ptr<Trainer>& trainer,
                     std::unique_ptr<BatchSource>& batches, std::unique_ptr<BackgroundSave>& saves,
                     StepReport& report);

  /// AutoCache for `trainer` after its weights are in, from `step` (steps done) on (collective:
  /// open_prefix_cache).
  void open_cache(Trainer& trainer, int64_t step);

  // The plan and groups in effect: the caller's until a layout change, then this object's.
  const RunPlan* plan_;
  ParallelContext* context_;
  std::vector<std::unique_ptr<RunPlan>> plans_;  // every plan since the start (the report's)
  std::unique_ptr<ParallelContext> owned_context_;
  std::chrono::steady_clock::time_point process_start_;
  bool node_leader_;
  std::optional<Manifest> resume_;
  std::vector<LayoutChange> scheduled_;  // relayout.steps
  std::vector<double> layer_norms_;      // freeze: each layer's gradient norm, summed since the
                                         // last decision
  int64_t window_steps_ = 0;             // the steps summed into layer_norms_
  std::unique_ptr<FilePrefixCache> prefix_cache_;  // AutoCache (the trainer points at it)
  // Asynchronous parameter servers: the held-out shares of dropped workers this rank scores (by
  // their dp rank), so that an evaluation still covers every sample.
  std::map<int, std::unique_ptr<BatchSource>> adopted_;
  size_t adopted_logged_ = 0;         // the drops the log has shown an evaluation after
  double cached_flops_per_unit_ = 0;  // FLOPs a row from it skips
};

}  // namespace triax
