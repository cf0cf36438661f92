// defines: triax::StepOutcome, triax::StepReport, triax::gather_peak_memory_mib
//
// What a person watching a GPT run sees, owned in one place: one log line per train.log_every
// steps on rank 0 (the interval's mean loss, validation loss, LR, grad norm, tokens/s, MFU,
// every rank's peak memory, ETA), one JSON record per step in run.dir/metrics.jsonl, and the
// summary at the end (tokens/s and MFU after the first step, time to the first step).
// tokens/s is global (global batch x seq_len / step time on rank 0's clock: every step ends in
// collectives). MFU = tokens/s x FLOPs per token / the job's peak FLOP/s.
// The report communicates nothing: the loop gathers the memory figures (a collective) on
// logging steps and hands them over, so every collective stays visible in the loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"
#include "train/run_plan.h"

namespace triax {

struct StepOutcome {
  int64_t step = 0;  ///< steps done (1-based)
  double loss = 0;   ///< mean over the global batch
  double lr = 0;
  double grad_norm = 0;
  double seconds = 0;              ///< the step's wall time
  std::optional<double> val_loss;  ///< on evaluation steps
};

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

class StepReport {
 public:
  using Clock = std::chrono::steady_clock;
  /// `metrics`: rank 0's open `metrics_path` (others: not open); `peak_flops`: the job's.
  StepReport(const RunPlan& plan, int64_t start_step, double peak_flops, double flops_per_token,
             Clock::time_point process_start, std::ofstream metrics, std::string metrics_path);

  /// Whether step `step` (1-based) prints a line (and so needs the memory figures).
  bool should_log(int64_t step) const;
  /// Records a finished step; `memory_mib`: every rank's peak, on logging steps.
  void record(const StepOutcome& outcome, const std::vector<double>& memory_mib);
  /// The run stopped after `steps` on `signal` (a checkpoint was saved if it could be).
  GptTrainingResult stopped(int64_t steps, int signal);
  /// The run's result, and the summary line.
  GptTrainingResult finish();

 private:
  std::string log_line(const StepOutcome& o, const std::vector<double>& memory_mib,
                       double tokens_per_s, double mfu, double eta) const;

  const RunPlan& plan_;
  int64_t start_step_, total_;
  double peak_flops_, flops_per_token_, tokens_per_step_;
  Clock::time_point process_start_, loop_start_;
  std::ofstream metrics_;
  std::string metrics_path_;
  GptTrainingResult result_;
  double steady_seconds_ = 0;  // step time after the first step (warm-up excluded)
  double interval_seconds_ = 0, interval_loss_ = 0;
  int64_t interval_steps_ = 0;
  double val_loss_;
};

/// Every rank's peak resident memory in MiB, in rank order (a collective over `world`).
std::vector<double> gather_peak_memory_mib(Communicator& world);

}  // namespace triax
