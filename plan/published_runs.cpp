#include "plan/published_runs.h"

#include "plan/candidate.h"
#include "plan/device_compute.h"
#include "plan/plan_topology.h"
#include "train/run_plan.h"

namespace triax {

const std::vector<PublishedRun>& megatron_table1() {
  // name, heads, hidden, layers, tp, pp, dp, micro-batch, global batch, chunks, torch DDP,
  // TFLOP/s per GPU (Table 1).
  static const std::vector<PublishedRun> rows = {
      {"1.7B", 24, 2304, 24, 1, 1, 32, 16, 512, 1, true, 137},
      {"3.6B", 32, 3072, 30, 2, 1, 32, 16, 512, 1, true, 138},
      {"7.5B", 32, 4096, 36, 4, 1, 32, 16, 512, 1, true, 142},
      {"18.4B", 48, 6144, 40, 8, 1, 32, 8, 1024, 1, true, 135},
      {"39.1B", 64, 8192, 48, 8, 2, 32, 4, 1536, 1, false, 138},
      {"76.1B", 80, 10240, 60, 8, 4, 32, 2, 1792, 3, false, 140},
      {"145.6B", 96, 12288, 80, 8, 8, 24, 2, 2304, 2, false, 148},
      {"310.1B", 128, 16384, 96, 8, 16, 15, 1, 2160, 2, false, 155},
      {"529.6B", 128, 20480, 105, 8, 35, 9, 1, 2520, 3, false, 163},
      {"1008.0B", 160, 25600, 128, 8, 64, 6, 1, 3072, 1, false, 163},
  };
  return rows;
}

Config published_run_config(const PublishedRun& run) {
  Config c;
  c.model.arch = ModelKind::kGpt;
  c.model.vocab = 51200;
  c.model.seq_len = 2048;
  c.model.hidden = run.hidden;
  c.model.heads = run.heads;
  c.model.layers = run.layers;
  c.model.dropout = 0.1;  // Megatron's attention and hidden dropout
  c.train.precision = Precision::kBf16;
  c.train.recompute = Recompute::kFull;
  c.train.global_batch = run.global_batch;
  c.train.micro_batch = run.micro_batch;
  c.train.optimizer = OptimizerKind::kAdamW;
  c.parallel.tensor = run.tp;
  c.parallel.pipeline = run.pp;
  c.schedule.name = run.chunks > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  c.schedule.chunks_per_rank = run.chunks;
  return c;
}

RunCheck check_published_run(const PublishedRun& run, const GpuModel& device) {
  const Config config = published_run_config(run);
  const int world = run.tp * run.pp * run.dp;
  Candidate c;
  c.dp = run.dp, c.tp = run.tp, c.pp = run.pp, c.chunks = run.chunks;
  c.schedule = config.schedule.name;
  c.micro_batch = run.micro_batch;
  c.microbatches = run.global_batch / run.dp / run.micro_batch;
  c.recompute = Recompute::kFull;
  const RunPlan plan = plan_run(c.applied(config), world, DataCheck::kSkip);
  GpuModel node = device;
  node.gpus_per_node = std::min(world, 8);
  Profile profile = device_profile(config, node);
  profile.overlaps_grad_sync = run.overlapped_sync;
  const PlanTopology topology(world, world / node.gpus_per_node);
  RunCheck out;
  out.prediction = predict(plan, c, profile, topology);
  const double b = static_cast<double>(run.global_batch), s = 2048, v = 51200;
  const double l = static_cast<double>(run.layers), h = static_cast<double>(run.hidden);
  out.paper_flops = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  out.predicted_tflops_per_gpu = out.paper_flops / out.prediction.step_seconds / world / 1e12;
  out.error = out.predicted_tflops_per_gpu / run.tflops_per_gpu - 1;
  return out;
}

}  // namespace triax
