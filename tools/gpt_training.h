// defines: triax::GptDataPlan, triax::plan_gpt_data, triax::GptTrainingResult, triax::GptTraining
//
// `triax train` for the GPT: the loop around GptTrainer's step. It reads fixed-length samples
// of the token files through the distributed sampler (each dp rank reads only its share of each
// global batch), sets the learning rate of each step, evaluates on the held-out split, reports
// what a person watching a run wants (rank 0, one line per train.log_every steps; every step to
// run.dir/metrics.jsonl), writes the pipeline trace of one step if asked, saves checkpoints
// (checkpoint.every, at the end, or when SIGTERM/SIGUSR1 arrives) and resumes from one, and ends
// with a sample of generated text.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "parallel/parallel_context.h"
#include "tools/checkpoint.h"

namespace triax {

/// What the token files allow, checked before any communication.
struct GptDataPlan {
  int64_t train_samples = 0;    ///< sequences of seq_len + 1 tokens in train.tok
  int64_t val_samples = 0;      ///< ... in val.tok
  int64_t steps_per_epoch = 0;  ///< floor(train_samples / global_batch)
  int64_t total_steps = 0;      ///< train.steps, or epochs * steps_per_epoch
  int64_t eval_batches = 0;     ///< global batches of val.tok per evaluation
};

/// Opens data.tokens' files and checks them against the batch, the sequence length and the LR
/// schedule; throws ConfigError naming the key, the value and what would be valid.
GptDataPlan plan_gpt_data(const Config& config);

struct GptTrainingResult {
  int64_t steps = 0;
  std::vector<double> step_losses;
  double val_loss = 0;               ///< at the end
  double tokens_per_second = 0;      ///< global, steps after the first
  double mfu = 0;                    ///< model FLOP utilisation over the same steps
  double seconds_to_first_step = 0;  ///< process start to the end of step 1
  double train_seconds = 0;          ///< the training loop, evaluations included
  std::string sample;                ///< generated text (empty if sample.tokens = 0)
  int stopped_by_signal = 0;         ///< SIGTERM/SIGUSR1 ended the run early (after a save)
};

class GptTraining {
 public:
  /// `process_start`: when the process began, for the time-to-first-step figure.
  /// `node_leader`: this rank measures its node's matmul peak for MFU (local rank 0).
  GptTraining(const Config& config, ParallelContext& context,
              std::chrono::steady_clock::time_point process_start, bool node_leader);
  /// Continue from `checkpoint` (read and checked by read_checkpoint) instead of step 0.
  void resume_from(const CheckpointManifest& checkpoint) { resume_ = checkpoint; }
  GptTrainingResult run();

 private:
  /// MFU's denominator in FLOP/s, for the whole job (a collective).
  double peak_flops();
  Config config_;
  ParallelContext& context_;
  std::chrono::steady_clock::time_point process_start_;
  bool node_leader_;
  std::optional<CheckpointManifest> resume_;
};

}  // namespace triax
