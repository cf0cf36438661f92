#include "tools/gpt_training.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include "core/batch_plan.h"
#include "core/distributed_sampler.h"
#include "core/error.h"
#include "core/json_line.h"
#include "core/log.h"
#include "core/lr_schedule.h"
#include "core/matmul_peak.h"
#include "core/peak_memory.h"
#include "core/token_sequences.h"
#include "models/gpt_flops.h"
#include "schedules/pipeline_trace.h"
#include "tools/gpt_trainer.h"
#include "tools/metrics_file.h"
#include "tools/pipeline_plan.h"
#include "tools/stop_signal.h"
#include "tools/text_generator.h"

namespace triax {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string train_path(const Config& c) {
  return c.data.tokens + "/train.tok";
}
std::string val_path(const Config& c) {
  return c.data.tokens + "/val.tok";
}

std::string duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return str(s / 3600, "h", (s % 3600) / 60, "m");
  if (s >= 60) return str(s / 60, "m", s % 60, "s");
  return str(s, "s");
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string scientific(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.2e", value);
  return text;
}

// Mean loss over the first `batches` global batches of the held-out split (no shuffle: the
// same tokens every time, so evaluations are comparable across a run and across layouts).
double evaluate(GptTrainer& trainer, const TokenSequences& val, int64_t batches,
                const ParallelContext& context) {
  const BatchPlan& plan = trainer.plan();
  double sum = 0;
  for (int64_t k = 0; k < batches; ++k) {
    std::vector<int64_t> indices(static_cast<size_t>(plan.local_batch));
    for (int64_t i = 0; i < plan.local_batch; ++i) {
      indices[static_cast<size_t>(i)] =
          k * plan.global_batch + context.dp_rank() * plan.local_batch + i;
    }
    sum += trainer.evaluate_local(val.batch(indices.data(), plan.local_batch));
  }
  return sum / static_cast<double>(batches);
}

}  // namespace

GptDataPlan plan_gpt_data(const Config& config) {
  const TrainConfig& train = config.train;
  check_lr_schedule(train);  // the configuration's own mistakes before the data's
  for (const std::string& path : {train_path(config), val_path(config)}) {
    if (!std::ifstream(path)) {
      throw ConfigError(str("data.tokens: '", config.data.tokens, "' has no ",
                            path.substr(path.rfind('/') + 1),
                            " (valid: a folder written by `triax prepare-data TEXT... --out ",
                            config.data.tokens, "`)"));
    }
  }
  GptDataPlan plan;
  try {
    plan.train_samples =
        TokenSequences(train_path(config), config.model.seq_len, config.model.vocab).size();
    plan.val_samples =
        TokenSequences(val_path(config), config.model.seq_len, config.model.vocab).size();
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    throw ConfigError(str("data.tokens: ", e.what()));
  }
  plan.steps_per_epoch = plan.train_samples / train.global_batch;
  if (plan.steps_per_epoch == 0) {
    throw ConfigError(str("train.global_batch: ", train.global_batch, " is larger than the ",
                          plan.train_samples, " training sequences of ", train_path(config),
                          " (valid: at most ", plan.train_samples, ")"));
  }
  const int64_t val_batches = plan.val_samples / train.global_batch;
  if (val_batches == 0) {
    throw ConfigError(str("train.global_batch: ", train.global_batch, " is larger than the ",
                          plan.val_samples, " held-out sequences of ", val_path(config),
                          " (valid: at most ", plan.val_samples,
                          "; or prepare the data with a larger --val-fraction)"));
  }
  plan.eval_batches =
      train.eval_batches > 0 ? std::min(train.eval_batches, val_batches) : val_batches;
  const int64_t all = train.epochs * plan.steps_per_epoch;
  plan.total_steps = train.steps > 0 ? std::min(train.steps, all) : all;
  return plan;
}

GptTraining::GptTraining(const Config& config, ParallelContext& context,
                         Clock::time_point process_start, bool node_leader)
    : config_(config),
      context_(context),
      process_start_(process_start),
      node_leader_(node_leader) {}

double GptTraining::peak_flops() {
  if (config_.run.peak_tflops > 0) return config_.run.peak_tflops * 1e12 * context_.world().size();
  // One rank per node measures with all of the node's cores while the others wait, so the sum
  // over nodes is the hardware's peak however many ranks share it.
  // The others sleep rather than poll meanwhile: a polling rank would take the cores measured.
  context_.world().barrier();
  double mine = 0;
  if (node_leader_) {
    const int threads = torch::get_num_threads();
    torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    mine = measure_matmul_tflops() * 1e12;
    torch::set_num_threads(threads);
    context_.world().barrier();
  } else {
    const WorkPtr done = context_.world().barrier_async();
    while (!done->is_completed()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  torch::Tensor total = torch::tensor({mine}, torch::kDouble);
  context_.world().all_reduce(total, ReduceOp::kSum);
  return total.item<double>();
}

GptTrainingResult GptTraining::run() {
  const TrainConfig& train = config_.train;
  const GptDataPlan data = plan_gpt_data(config_);
  const TokenSequences sequences(train_path(config_), config_.model.seq_len, config_.model.vocab);
  const TokenSequences val(val_path(config_), config_.model.seq_len, config_.model.vocab);
  GptTrainer trainer(config_, context_);
  const BatchPlan& plan = trainer.plan();
  int64_t start_step = 0;
  if (resume_) {
    const Clock::time_point load_start = Clock::now();
    load_checkpoint(trainer, context_, *resume_);
    context_.world().barrier();
    const double load_seconds = seconds_between(load_start, Clock::now());
    start_step = resume_->step;
    // data_written_at is 0 for checkpoints made by `triax reshard`/`import`, not by a run.
    const std::string origin = resume_->data_written_at > 0
                                   ? str("written at dp ", resume_->data_written_at)
                                   : std::string("converted offline");
    log::info(str("resumed from ", resume_->dir, " after step ", start_step, " (",
                  resume_->consumed_samples, " samples; ", origin, ", now dp ", context_.dp_size(),
                  ") in ", fixed(load_seconds, 2), " s"));
  }
  const int64_t total = data.total_steps;
  if (start_step >= total) {
    // A requeued job that had already finished, or a resume with fewer steps configured.
    log::info(str("nothing to train: the checkpoint is at step ", start_step, " and the run has ",
                  total, " steps (raise train.steps or train.epochs to continue)"));
    GptTrainingResult done;
    done.steps = start_step;
    return done;
  }
  const double tokens_per_step = static_cast<double>(plan.global_batch * config_.model.seq_len);

  const double peak_flops = this->peak_flops();
  const double flops_per_token = gpt_flops_per_token(config_.model);

  log::info(str("GPT: ", trainer.model_parameters(), " parameters, ",
                fixed(flops_per_token / 1e6, 2), " MFLOP per token (6N + attention); ",
                plan.describe(), "; schedule ", trainer.schedule().name, " (",
                trainer.schedule().microbatches, " micro-batches, ", trainer.schedule().chunks,
                " chunk(s) per rank)"));
  log::info(str("data: ", data.train_samples, " training sequences of ", config_.model.seq_len,
                " tokens (", data.steps_per_epoch, " steps per epoch), ", data.val_samples,
                " held-out (", data.eval_batches, " batches per evaluation); ", total,
                " steps; MFU against a peak of ", fixed(peak_flops / 1e12, 3), " TFLOP/s (",
                config_.run.peak_tflops > 0 ? "run.peak_tflops x ranks"
                                            : "fp32 matmul measured on all cores of each node",
                ")"));

  std::ofstream metrics;
  if (!config_.run.dir.empty() && context_.rank() == 0) {
    const std::string path = config_.run.dir + "/metrics.jsonl";
    metrics = open_metrics_file(path, resume_ ? start_step : -1);
  }

  DistributedSampler sampler(DistributedSamplerOptions{data.train_samples, context_.dp_size(),
                                                       context_.dp_rank(), train.shuffle,
                                                       train.seed, false});
  std::vector<int64_t> indices;
  GptTrainingResult result;
  const Clock::time_point loop_start = Clock::now();
  double steady_seconds = 0;  // step time after the first step (warm-up excluded)
  double interval_seconds = 0, interval_loss = 0;
  int64_t interval_steps = 0;
  double val_loss = std::nan("");
  for (int64_t step = start_step; step < total; ++step) {
    const int64_t epoch = step / data.steps_per_epoch;
    if (indices.empty() || step % data.steps_per_epoch == 0) {
      sampler.set_epoch(epoch);
      indices = sampler.indices();
    }
    const int64_t first = (step % data.steps_per_epoch) * plan.local_batch;
    const torch::Tensor local = sequences.batch(indices.data() + first, plan.local_batch);
    const double lr = learning_rate(train, step, total);
    trainer.set_learning_rate(lr);
    const bool tracing = !config_.schedule.trace.empty() && step + 1 == config_.schedule.trace_step;
    trainer.set_tracing(tracing);

    const Clock::time_point start = Clock::now();
    const double loss = trainer.step_local(local);
    const double seconds = seconds_between(start, Clock::now());
    if (step == start_step) {
      result.seconds_to_first_step = seconds_between(process_start_, Clock::now());
    } else {
      steady_seconds += seconds;
    }
    result.step_losses.push_back(loss);
    interval_seconds += seconds;
    interval_loss += loss;
    ++interval_steps;

    if (tracing) {
      trainer.set_tracing(false);
      const PipelineTrace trace = gather_trace(context_.pp(), trainer.trace());
      if (context_.rank() == 0) {
        std::ofstream(config_.schedule.trace)
            << chrome_trace_json(trace, str("triax ", trainer.schedule().name, " step ", step + 1));
        log::info(str("pipeline trace of step ", step + 1, " written to ", config_.schedule.trace,
                      " (measured bubble ", fixed(measured_bubble(trace), 3),
                      "; open it in https://ui.perfetto.dev)"));
      }
    }
    const bool last = step + 1 == total;
    const bool evaluating = last || (train.eval_every > 0 && (step + 1) % train.eval_every == 0);
    if (evaluating) val_loss = evaluate(trainer, val, data.eval_batches, context_);

    JsonLine record;
    record.add("step", step + 1)
        .add("loss", loss)
        .add("lr", lr)
        .add("grad_norm", trainer.last_grad_norm());
    if (evaluating) record.add("val_loss", val_loss);
    const bool logging = last || (train.log_every > 0 && (step + 1) % train.log_every == 0);
    if (logging) {
      torch::Tensor rss =
          torch::tensor({static_cast<double>(peak_rss_bytes()) / (1 << 20)}, torch::kDouble);
      const torch::Tensor all_rss = context_.world().all_gather(rss);
      const std::vector<double> per_rank(all_rss.data_ptr<double>(),
                                         all_rss.data_ptr<double>() + all_rss.numel());
      const double tokens_per_s = interval_steps * tokens_per_step / interval_seconds;
      const double mfu = tokens_per_s * flops_per_token / peak_flops;
      const double elapsed = seconds_between(loop_start, Clock::now());
      const double eta =
          elapsed / static_cast<double>(step + 1) * static_cast<double>(total - step - 1);
      record.add("tokens_per_s", tokens_per_s)
          .add("mfu", mfu)
          .add("peak_rss_mib", per_rank)
          .add("elapsed_s", elapsed)
          .add("eta_s", eta);
      std::string line =
          str("step ", step + 1, "/", total, " | loss ", fixed(interval_loss / interval_steps, 4));
      if (evaluating) line += str(" | val ", fixed(val_loss, 4));
      line += str(" | lr ", scientific(lr), " | grad norm ", fixed(trainer.last_grad_norm(), 3),
                  " | ", fixed(tokens_per_s, 0), " tok/s | MFU ", fixed(100 * mfu, 2),
                  "% | peak mem ", fixed(*std::max_element(per_rank.begin(), per_rank.end()), 0),
                  " MiB/rank (max) | ETA ", duration(eta));
      log::info(line);
      interval_seconds = interval_loss = 0;
      interval_steps = 0;
    } else if (evaluating) {
      log::info(str("step ", step + 1, "/", total, " | val ", fixed(val_loss, 4)));
    }
    if (metrics.is_open()) metrics << record.str() << "\n" << std::flush;

    // Ranks may get a stop signal at different moments (or only some of them): agree on it.
    torch::Tensor stop =
        torch::tensor({static_cast<double>(stop_signal_received())}, torch::kDouble);
    context_.world().all_reduce(stop, ReduceOp::kMax);
    result.stopped_by_signal = static_cast<int>(stop.item<double>());
    const bool periodic =
        config_.checkpoint.every > 0 && (step + 1) % config_.checkpoint.every == 0;
    const bool saving = periodic || (last && config_.checkpoint.at_end) || result.stopped_by_signal;
    if (saving && checkpoint_root(config_).empty()) {
      // at_end alone is on by default: without a folder it quietly does nothing.
      if (periodic || result.stopped_by_signal) {
        log::warn("no checkpoint saved: set checkpoint.dir or run.dir");
      }
    } else if (saving) {
      const Clock::time_point save_start = Clock::now();
      const std::string dir = save_checkpoint(trainer, context_, config_, step + 1);
      log::info(str("checkpoint of step ", step + 1, " saved to ", dir, " in ",
                    fixed(seconds_between(save_start, Clock::now()), 2), " s"));
    }
    if (result.stopped_by_signal) {
      log::info(str("stopping after step ", step + 1, " on signal ", result.stopped_by_signal,
                    "; continue with --resume latest"));
      result.steps = step + 1;
      return result;
    }
  }
  result.steps = total;
  result.val_loss = val_loss;
  result.train_seconds = seconds_between(loop_start, Clock::now());
  const int64_t ran = total - start_step;
  const double steady_steps = static_cast<double>(std::max<int64_t>(ran - 1, 1));
  const double steady = ran > 1 ? steady_seconds : result.train_seconds;
  result.tokens_per_second = steady_steps * tokens_per_step / steady;
  result.mfu = result.tokens_per_second * flops_per_token / peak_flops;
  log::info(str("done: ", total, " steps in ", fixed(result.train_seconds, 1), " s; ",
                fixed(result.tokens_per_second, 0), " tokens/s and MFU ",
                fixed(100 * result.mfu, 2), "% after the first step; loss ",
                fixed(result.step_losses.front(), 4), " -> ", fixed(result.step_losses.back(), 4),
                ", val loss ", fixed(val_loss, 4), "; first step done ",
                fixed(result.seconds_to_first_step, 2), " s after start"));

  if (config_.sample.tokens > 0) {
    result.sample = generate_text(trainer, context_, config_);
    const std::string how =
        config_.sample.top_k <= 1
            ? std::string("greedy")
            : str("top-k ", config_.sample.top_k, ", temperature ", config_.sample.temperature);
    log::info(str("sample (", how, ", ", config_.sample.tokens, " bytes after the prompt):\n",
                  printable(result.sample), "\n--- end of sample"));
    if (!config_.run.dir.empty() && context_.rank() == 0) {
      std::ofstream(config_.run.dir + "/sample.txt") << result.sample << "\n";
    }
  }
  return result;
}

}  // namespace triax
