// defines: triax::GptTraining
//
// `triax train` for the GPT: the loop around GptTrainer's step. Each step reads this dp rank's
// share of the next global batch (data/local_batches.h), sets the step's learning rate, runs the
// step, and then — each a component deciding for itself — writes the pipeline trace of one
// step, evaluates on the held-out split, reports (train/step_report.h), agrees with the other
// ranks on a stop signal, and saves a checkpoint when the policy says so
// (checkpoint/save_policy.h). It resumes from a checkpoint and ends with a sample of generated
// text.
#pragma once

#include <chrono>
#include <optional>

#include "checkpoint/manifest.h"
#include "parallel/parallel_context.h"
#include "train/gpt_trainer.h"
#include "train/run_plan.h"
#include "train/step_report.h"

namespace triax {

class GptTraining {
 public:
  /// `plan`: with its data open. `process_start`: when the process began, for the
  /// time-to-first-step figure. `node_leader`: this rank measures its node's matmul peak for MFU
  /// (local rank 0).
  GptTraining(const RunPlan& plan, ParallelContext& context,
              std::chrono::steady_clock::time_point process_start, bool node_leader);
  /// Continue from `checkpoint` (read and checked by read_checkpoint) instead of step 0.
  void resume_from(const Manifest& checkpoint) { resume_ = checkpoint; }
  GptTrainingResult run();

 private:
  int64_t load_checkpoint(GptTrainer& trainer);
  StepReport start_report(GptTrainer& trainer, int64_t start_step);
  /// MFU's denominator in FLOP/s, for the whole job (a collective).
  double peak_flops();
  bool tracing(int64_t step) const;
  bool evaluating(int64_t step) const;
  void write_trace(GptTrainer& trainer, int64_t step);
  double evaluate(GptTrainer& trainer);
  void save(GptTrainer& trainer, int64_t step);
  std::string write_sample(GptTrainer& trainer);

  const RunPlan& plan_;
  ParallelContext& context_;
  std::chrono::steady_clock::time_point process_start_;
  bool node_leader_;
  std::optional<Manifest> resume_;
};

}  // namespace triax
