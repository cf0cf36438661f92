#include "train/step_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/json_line.h"
#include "core/log.h"
#include "core/peak_memory.h"
#include "core/strings.h"
#include "job/output_check.h"
#include "train/freeze.h"

namespace triax {
namespace {

double seconds_between(StepReport::Clock::time_point a, StepReport::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return str(s / 3600, "h", (s % 3600) / 60, "m");
  if (s >= 60) return str(s / 60, "m", s % 60, "s");
  return str(s, "s");
}

std::string scientific(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.2e", value);
  return text;
}

}  // namespace

StepReport::StepReport(const RunPlan& plan, const ModelSpec& spec, int64_t start_step,
                       double peak_flops, Clock::time_point process_start, std::ofstream metrics,
                       std::string metrics_path)
    : plan_(plan),
      spec_(spec),
      start_step_(start_step),
      total_(plan.data.total_steps),
      peak_flops_(peak_flops),
      flops_per_unit_(training_flops_per_unit(spec, plan.config)),
      units_per_step_(
          static_cast<double>(plan.batch.global_batch * spec.units_per_sample(plan.config.model))),
      process_start_(process_start),
      loop_start_(Clock::now()),
      metrics_(std::move(metrics)),
      metrics_path_(std::move(metrics_path)),
      metric_(std::nan("")) {}

std::string StepReport::metric_text(double value, int64_t samples, bool brief) const {
  if (!spec_.metric_is_fraction)
    return str(brief ? "val" : spec_.metric_name, " ", fixed(value, 4));
  return str(spec_.metric_name, " ", fixed(100 * value, 2), "%",
             brief ? std::string() : str(" on ", samples, " samples"));
}

bool StepReport::should_log(int64_t step) const {
  const int64_t every = plan_.config.train.log_every;
  return step == total_ || (every > 0 && step % every == 0);
}

void StepReport::record(const StepOutcome& o, const std::vector<double>& memory_mib) {
  // A step trained on part of the global batch after a worker was dropped (batch_fraction).
  const double units = units_per_step_ * o.batch_fraction;
  if (o.step == start_step_ + 1) {
    result_.seconds_to_first_step = seconds_between(process_start_, Clock::now());
  } else {
    steady_seconds_ += o.seconds;
    steady_units_ += units;
    steady_flops_ += units * (flops_per_unit_ - o.skipped_flops_per_unit);
  }
  interval_units_ += units;
  interval_flops_ += units * (flops_per_unit_ - o.skipped_flops_per_unit);
  result_.step_losses.push_back(o.loss);
  interval_seconds_ += o.seconds;
  interval_loss_ += o.loss;
  ++interval_steps_;
  if (o.metric) {
    metric_ = *o.metric;
    metric_samples_ = o.metric_samples;
  }

  JsonLine record;
  record.add("step", o.step)
      .add("loss", o.loss)
      .add("lr", o.lr)
      .add("grad_norm", o.grad_norm)
      .add("step_s", o.seconds);
  if (o.metric) record.add(spec_.metric_key, *o.metric);
  if (o.prefix_cached) record.add("prefix_cached", *o.prefix_cached);
  if (pending_relayout_) {
    record.add("relayout_after_step", pending_relayout_->step)
        .add("relayout_from", pending_relayout_->from)
        .add("relayout_to", pending_relayout_->to)
        .add("relayout_trigger", pending_relayout_->trigger)
        .add("relayout_pause_s", pending_relayout_->seconds);
    pending_relayout_.reset();
  }
  if (should_log(o.step)) {
    const double units_per_s = interval_units_ / interval_seconds_;
    const double mfu = interval_flops_ / interval_seconds_ / peak_flops_;
    const double elapsed = seconds_between(loop_start_, Clock::now());
    const double eta =
        elapsed / static_cast<double>(o.step - start_step_) * static_cast<double>(total_ - o.step);
    record.add(str(spec_.unit, "_per_s"), units_per_s)
        .add("mfu", mfu)
        .add("peak_rss_mib", memory_mib)
        .add("elapsed_s", elapsed)
        .add("eta_s", eta);
    log::info(log_line(o, memory_mib, units_per_s, mfu, eta));
    interval_seconds_ = interval_loss_ = interval_flops_ = interval_units_ = 0;
    interval_steps_ = 0;
  } else if (o.metric) {
    log::info(str("step ", o.step, "/", total_, " | ", metric_text(*o.metric, 0, true)));
  }
  if (metrics_.is_open()) {
    metrics_ << record.str() << "\n";
    check_written(metrics_, metrics_path_, "the metrics (run.dir)");
  }
}

std::string StepReport::log_line(const StepOutcome& o, const std::vector<double>& memory_mib,
                                 double units_per_s, double mfu, double eta) const {
  std::string line =
      str("step ", o.step, "/", total_, " | loss ", fixed(interval_loss_ / interval_steps_, 4));
  if (o.metric) line += str(" | ", metric_text(*o.metric, 0, true));
  const double peak =
      memory_mib.empty() ? 0 : *std::max_element(memory_mib.begin(), memory_mib.end());
  return line + str(" | lr ", scientific(o.lr), " | grad norm ", fixed(o.grad_norm, 3), " | ",
                    fixed(units_per_s, 0), " ", spec_.unit_short, "/s | MFU ", fixed(100 * mfu, 2),
                    "% | peak mem ", fixed(peak, 0), " MiB/rank (max) | ETA ", duration(eta));
}

void StepReport::record_relayout(const RelayoutEvent& event, const Config& config) {
  flops_per_unit_ = training_flops_per_unit(spec_, config);
  result_.relayouts.push_back(event);
  pending_relayout_ = event;
}

TrainingResult StepReport::stopped(int64_t steps, int signal) {
  log::info(
      str("stopping after step ", steps, " on signal ", signal, "; continue with --resume latest"));
  result_.steps = steps;
  result_.stopped_by_signal = signal;
  return result_;
}

TrainingResult StepReport::finish() {
  result_.steps = total_;
  result_.metric = metric_;
  result_.metric_samples = metric_samples_;
  result_.train_seconds = seconds_between(loop_start_, Clock::now());
  const int64_t ran = total_ - start_step_;
  const double steady_steps = static_cast<double>(std::max<int64_t>(ran - 1, 1));
  const double steady = ran > 1 ? steady_seconds_ : result_.train_seconds;
  result_.units_per_second =
      ran > 1 ? steady_units_ / steady : steady_steps * units_per_step_ / steady;
  // FLOPs step by step: frozen layers (train.frozen_layers) need their forward only.
  result_.mfu = (ran > 1 ? steady_flops_ / steady_seconds_
                         : units_per_step_ * flops_per_unit_ / result_.train_seconds) /
                peak_flops_;
  log::info(str("done: ", total_, " steps in ", fixed(result_.train_seconds, 1), " s; ",
                fixed(result_.units_per_second, 0), " ", spec_.unit, "/s and MFU ",
                fixed(100 * result_.mfu, 2), "% after the first step; loss ",
                fixed(result_.step_losses.front(), 4), " -> ", fixed(result_.step_losses.back(), 4),
                ", ", metric_text(metric_, metric_samples_, false), "; first step done ",
                fixed(result_.seconds_to_first_step, 2), " s after start"));
  return result_;
}

std::vector<double> gather_peak_memory_mib(Communicator& world) {
  const torch::Tensor mine =
      torch::tensor({static_cast<double>(peak_rss_bytes()) / (1 << 20)}, torch::kDouble);
  const torch::Tensor all = world.all_gather(mine);
  return std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + all.numel());
}

}  // namespace triax
