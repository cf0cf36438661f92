#include "plan/explain.h"

#include <cstdio>

#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "plan/device_compute.h"
#include "train/run_plan.h"

namespace triax {
namespace {

std::string ms(double seconds) {
  return fixed(seconds * 1e3, 3) + " ms";
}

// One layer's kernels on the device's roofline: what each costs and what bounds it.
std::string kernel_table(const Config& config, const Candidate& c, const Profile& profile,
                         const GpuModel& device) {
  const ModelSpec& spec = model_spec(config.model.arch);
  if (!spec.kernels) return "";
  const double element = profile.message_element_bytes;
  const StageKernels k =
      spec.kernels(config.model, KernelShape{c.tp, c.micro_batch, c.sequence && c.tp > 1, element});
  std::string text =
      str("  one layer's forward, per micro-batch of ", c.micro_batch,
          " on a rank (roofline: matmul at ", fixed(device.matmul_efficiency, 2), " x ",
          fixed(profile.peak_flops / 1e12, 1), " TFLOP/s, memory at ",
          fixed(device.memory_efficiency, 2), " x ", fixed(device.memory_bandwidth / 1e9, 0),
          " GB/s, ", fixed(device.launch_seconds * 1e6, 1), " us a kernel):\n");
  char line[256];
  std::snprintf(line, sizeof line, "    %-18s %-26s %10s %10s %10s  %s\n", "kernel", "shape",
                "GFLOP", "MB", "us", "bound");
  text += line;
  const double memory = device.memory_bandwidth * device.memory_efficiency;
  for (const Kernel& kernel : k.layer) {
    const KernelTime t = kernel_seconds(kernel, device, profile.peak_flops, element);
    std::string shape;
    double bytes = kernel.bytes;
    std::string bound = "memory";
    if (kernel.matmul()) {
      shape = str(kernel.batch > 1 ? fixed(kernel.batch, 0) + " x " : "", "[", fixed(kernel.m, 0),
                  ",", fixed(kernel.k, 0), "]x[", fixed(kernel.k, 0), ",", fixed(kernel.n, 0), "]");
      bytes = element * (kernel.m * kernel.k + kernel.k * kernel.n + kernel.m * kernel.n) *
              kernel.batch;
      if (kernel.flops() / (profile.peak_flops * device.matmul_efficiency) >= bytes / memory) {
        bound = "matmul";
      }
    }
    std::snprintf(line, sizeof line, "    %-18s %-26s %10.2f %10.2f %10.1f  %s\n",
                  kernel.name.c_str(), shape.c_str(), kernel.flops() / 1e9, bytes / 1e6,
                  t.forward * 1e6, bound.c_str());
    text += line;
  }
  return text;
}

}  // namespace

std::string explain_row(const Config& config, const PlanRequest& request, const LayoutPlan& plan,
                        int row, const Profile& profile, const GpuModel* device) {
  if (row < 1 || static_cast<size_t>(row) > plan.rows.size()) {
    throw ConfigError(str("--explain ", row, ": no such row (valid: 1 to ", plan.rows.size(),
                          ", the ranked rows)"));
  }
  const PlanRow& r = plan.rows[static_cast<size_t>(row - 1)];
  const Candidate& c = r.candidate;
  const Prediction& p = r.prediction;
  const ModelSpec& spec = model_spec(config.model.arch);
  const RunPlan run = plan_run(c.applied(config), request.world, DataCheck::kSkip);
  std::string text = str("row ", row, ": ", c.describe(), "\n  run: ", c.overrides(), "\n",
                         "  profile: ", plan.profile_source, "\n");

  text += "\ncompute\n";
  if (device) text += kernel_table(config, c, profile, *device);
  const ComputeTiming t = profile.timing(c.tp, c.micro_batch, c.recompute, run.sequence_parallel);
  text +=
      str("  per micro-batch: a layer ", ms(t.layer.forward), " forward, ", ms(t.layer.backward),
          " backward (", choice_name(c.recompute), " recompute); the first stage adds ",
          ms(t.first.forward), " + ", ms(t.first.backward), ", the last ", ms(t.last.forward),
          " + ", ms(t.last.backward), "\n");
  if (c.cp > 1) {
    text +=
        str("  (of the whole sequence: at cp ", c.cp,
            " a rank's matmuls take 1/cp of it and attention ",
            c.context_mode == ContextMode::kRing ? "(2cp + 1) / 4cp^2 (the ring's visible blocks)"
                                                 : "1/cp (all-to-all: its heads)",
            "; docs/plan.md, step 6)\n");
  }
  std::vector<std::string> stages;
  for (const auto& [first, last] : run.stage_layers) stages.push_back(str(last - first));
  text +=
      str("  ", run.schedule.total_stages(), " stage(s) on ", c.pp, " pipeline rank(s), layers ",
          join(stages, "+"), "; ", c.microbatches, " micro-batches of ", c.micro_batch,
          " per step on each of ", c.dp, " dp x ", c.cp, " cp replicas\n");
  text += str("  the ", choice_name(c.schedule), " schedule simulated: busiest rank computes ",
              ms(p.compute), ", idles ", ms(p.bubble), " (bubble ",
              fixed(100 * p.bubble_fraction, 1), "%)\n");

  text += "\ncommunication (what the step waits for)\n";
  text += str("  gradient sync over ", c.replicas(), " replicas: ", ms(p.dp_comm),
              profile.overlaps_grad_sync ? " exposed (the rest hides behind backward)" : "", "\n");
  text += str("  tp collectives beyond the layer times: ", ms(p.tp_cross), "\n");
  if (c.cp > 1) text += str("  context exchanges: ", ms(p.cp_comm), "\n");
  text += str("\noptimizer: ", ms(p.optimizer), "; per-step overhead ", ms(p.overhead), "\n");
  text += str("step = ", ms(p.compute + p.bubble), " pipeline + ", ms(p.communication()),
              " communication + ", ms(p.optimizer + p.overhead), " = ", ms(p.step_seconds), "\n");

  const double units =
      static_cast<double>(config.train.global_batch * spec.units_per_sample(config.model));
  text += str("throughput: ", config.train.global_batch, " samples x ",
              spec.units_per_sample(config.model), " ", spec.unit, " / ", fixed(p.step_seconds, 4),
              " s = ", fixed(units / p.step_seconds, 0), " ", spec.unit, "/s, ",
              fixed(units / p.step_seconds / request.world, 1), " per rank\n");
  if (r.mfu > 0) {
    text += str("MFU: ", fixed(units / p.step_seconds, 0), " x ",
                fixed(spec.flops_per_unit(config.model) / 1e9, 3), " GFLOP per ", spec.unit, " (",
                spec.flops_rule, ") / (", request.world, " x ", fixed(plan.peak_flops / 1e12, 1),
                " TFLOP/s) = ", fixed(100 * r.mfu, 1), "%\n");
  }

  text += "\nmemory per pipeline rank (MiB)\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %4s %10s %10s %10s %11s %9s %9s %10s\n", "rank", "weights",
                "gradients", "optimizer", "activations", "snapshot", "process", "total");
  text += line;
  for (size_t k = 0; k < p.memory.size(); ++k) {
    const RankMemory& m = p.memory[k];
    std::snprintf(line, sizeof line, "  %4zu %10.1f %10.1f %10.1f %11.1f %9.1f %9.1f %10.1f\n", k,
                  mib(m.parameters), mib(m.gradients), mib(m.optimizer), mib(m.activations),
                  mib(m.checkpoint_snapshot), mib(plan.base_bytes),
                  mib(m.total() + plan.base_bytes));
    text += line;
  }
  text += request.memory_per_rank > 0
              ? str("  limit ", fixed(mib(request.memory_per_rank), 0), " MiB",
                    request.memory_source.empty() ? "" : " (" + request.memory_source + ")", "\n")
              : std::string("  no limit\n");
  return text;
}

}  // namespace triax
