// defines: triax::StepOutcome, triax::TrainingResult, triax::StepReport,
//          triax::gather_peak_memory_mib
//
// What a person watching a run sees, owned in one place: one log line per train.log_every steps
// on rank 0 (the interval's mean loss, the evaluation metric, LR, grad norm, throughput, MFU,
// every rank's peak memory, ETA), one JSON record per step in run.dir/metrics.jsonl, and the
// summary at the end (throughput and MFU after the first step, time to the first step). The
// model spec names the units (GPT: tokens; MLP: samples) and the metric (GPT: val loss; MLP:
// test accuracy). Throughput is global (global batch x units per sample / step time on rank 0's
// clock: every step ends in collectives). MFU = units/s x FLOPs per unit / the job's peak.
// The report communicates nothing: the loop gathers the memory figures (a collective) on
// logging steps and hands them over, so every collective stays visible in the loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "parallel/comm/communicator.h"
#include "train/run_plan.h"

namespace triax {

struct StepOutcome {
  int64_t step = 0;  ///< steps done (1-based)
  double loss = 0;   ///< mean over the global batch
  double lr = 0;
  double grad_norm = 0;
  double seconds = 0;            ///< the step's wall time
  std::optional<double> metric;  ///< the evaluation metric, on evaluation steps
  int64_t metric_samples = 0;    ///< the samples it covers (all ranks)
  /// AutoCache: the fraction of this rank's first-stage rows whose frozen prefix came from the
  /// cache (train/prefix_cache.h); absent when nothing is cached.
  std::optional<double> prefix_cached;
  /// FLOPs per unit the step did not do because of it (MFU counts only what ran).
  double skipped_flops_per_unit = 0;
  /// The share of the global batch trained on: below 1 once asynchronous parameter servers
  /// dropped a worker (its share is skipped).
  double batch_fraction = 1;
};

/// An online layout change (train/relayout.h): after which step, from and to which layout, what
/// asked for it, and how long training paused for it.
struct RelayoutEvent {
  int64_t step = 0;
  std::string from, to, trigger;
  double seconds = 0;
};

struct TrainingResult {
  int64_t steps = 0;
  std::vector<double> step_losses;
  double metric = 0;                     ///< the evaluation metric at the end (GPT: val loss)
  int64_t metric_samples = 0;            ///< the samples it covers
  double units_per_second = 0;           ///< global tokens (GPT) or samples (MLP) per second, after
                                         ///< the first step
  double mfu = 0;                        ///< model FLOP utilisation over the same steps
  double seconds_to_first_step = 0;      ///< process start to the end of step 1
  double train_seconds = 0;              ///< the training loop, evaluations included
  std::string sample;                    ///< generated text (empty if sample.tokens = 0)
  int stopped_by_signal = 0;             ///< SIGTERM/SIGUSR1 ended the run early (after a save)
  std::vector<RelayoutEvent> relayouts;  ///< every layout change, in order
};

class StepReport {
 public:
  using Clock = std::chrono::steady_clock;
  /// `metrics`: rank 0's open `metrics_path` (others: not open); `peak_flops`: the job's.
  StepReport(const RunPlan& plan, const ModelSpec& spec, int64_t start_step, double peak_flops,
             Clock::time_point process_start, std::ofstream metrics, std::string metrics_path);

  /// Whether step `step` (1-based) prints a line (and so needs the memory figures).
  bool should_log(int64_t step) const;
  /// Records a finished step; `memory_mib`: every rank's peak, on logging steps.
  void record(const StepOutcome& outcome, const std::vector<double>& memory_mib);
  /// A layout change after the last recorded step: kept for the result, and written into the
  /// next step's metrics record (relayout_* keys), so metrics.jsonl stays one record per step.
  /// `config`: the new layout's (its frozen layers change the FLOPs a step needs).
  void record_relayout(const RelayoutEvent& event, const Config& config);
  /// The run stopped after `steps` on `signal` (a checkpoint was saved if it could be).
  TrainingResult stopped(int64_t steps, int signal);
  /// The run's result, and the summary line.
  TrainingResult finish();

 private:
  std::string log_line(const StepOutcome& o, const std::vector<double>& memory_mib,
                       double units_per_s, double mfu, double eta) const;
  /// "val 2.4274" (a loss) or "test accuracy 85.12% on 10000 samples" (a fraction).
  std::string metric_text(double value, int64_t samples, bool brief) const;

  const RunPlan& plan_;
  const ModelSpec& spec_;
  int64_t start_step_, total_;
  double peak_flops_, flops_per_unit_, units_per_step_;
  Clock::time_point process_start_, loop_start_;
  std::ofstream metrics_;
  std::string metrics_path_;
  TrainingResult result_;
  double steady_seconds_ = 0;  // step time after the first step (warm-up excluded)
  double steady_flops_ = 0;    // the FLOPs of those steps (MFU's numerator)
  double interval_flops_ = 0;
  double interval_units_ = 0;  // tokens (samples) trained on since the last log line
  double steady_units_ = 0;    // ... in the steps after the first
  double interval_seconds_ = 0, interval_loss_ = 0;
  int64_t interval_steps_ = 0;
  double metric_;
  int64_t metric_samples_ = 0;
  std::optional<RelayoutEvent> pending_relayout_;
};

/// Every rank's peak resident memory in MiB, in rank order (a collective over `world`).
std::vector<double> gather_peak_memory_mib(Communicator& world);

}  // namespace triax
