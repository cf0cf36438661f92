// Benchmark (not a test): per-rank memory of GPT training, measured against the analytic model.
//   mpirun -np N build/triax_bench_memory [--set KEY=VALUE ...]
// Default: the main job's GPT scaled up (hidden 512, 8 layers, 8 heads, sequence 256,
// vocabulary 256), micro-batch 4, one micro-batch per step, AdamW, dropout 0; layout and
// recompute from --set (parallel.tensor, parallel.pipeline, train.recompute, ...), dp = the rest.
// Measured: bytes of live tensors (core/tensor_memory.h: a counting allocator in front of
// LibTorch's), not the resident set. Parameters = their tensors; gradients = what building the
// trainer added beyond them (DDP's buckets, and with ddp.shard its slices; ZeRO-2: the slices
// only); optimizer state = what the first step left behind (sharded: the trainer's count of its
// moments); gradients in a step = DDP's own count of its buffers at their peak (ZeRO-2: the
// slices, the buckets being filled and those in flight); activations = the peak of live tensors
// during the next step above its start (ZeRO-2's transient buckets included). ZeRO-3: parameters
// = this rank's slices (DDP's count) between steps, and in a step DDP's count at its peak (the
// slices and the units gathered at once); the activations then exclude that peak's gathered
// units, which the parameter column shows. train.param_dtype: bf16: the working weights are bf16
// (half the parameter bytes, whole or sliced and gathered), the optimizer's count adds the fp32
// master of its slices (12/dp bytes per parameter with the moments), the gradients stay fp32.
// Theory: the model spec's memory formula (models/transformer_memory.h).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/compute_threads.h"
#include "core/heap_reuse.h"
#include "core/mixed_precision.h"
#include "core/tensor_memory.h"
#include "job/job_start.h"
#include "models/gpt_spec.h"
#include "models/model_spec.h"
#include "train/trainer.h"

using namespace triax;

namespace {

Config scaled_up_gpt() {
  Config c;
  c.model.arch = ModelKind::kGpt;
  c.model.layers = 8;
  c.model.hidden = 512;
  c.model.heads = 8;
  c.model.seq_len = 256;
  c.model.vocab = 256;
  c.train.micro_batch = 4;
  c.train.optimizer = OptimizerKind::kAdamW;
  c.train.lr = 1e-4;
  c.train.threads = 1;
  return c;
}

// The scaled-up GPT with --set's changes, one micro-batch per step at every dp.
Config bench_config(const std::vector<std::string>& overrides, int world_size) {
  Config config = parse_config(to_yaml(scaled_up_gpt()), overrides);
  const int model_ranks = static_cast<int>(config.parallel.context * config.parallel.tensor *
                                           config.parallel.pipeline);  // dp = world / this
  config.train.global_batch = config.train.micro_batch * (world_size / std::max(1, model_ranks));
  return config;
}

void run_bench(const Config& config, const std::shared_ptr<Communicator>& world) {
  const int dp = world->size() / static_cast<int>(config.parallel.context * config.parallel.tensor *
                                                  config.parallel.pipeline);
  // ZeRO splits over the ranks with the same weights: dp x cp.
  const int shards = dp * static_cast<int>(config.parallel.context);
  set_compute_threads(static_cast<int>(config.train.threads));
  const RunPlan plan = plan_run(config, world->size(), DataCheck::kSkip);
  ParallelContext context(world, plan.layout);
  const auto batch = [&](int step) { return random_token_batch(config, step); };

  const int64_t at_start = TensorMemory::live();
  Trainer trainer(plan, context);
  double params = 0;
  int layers_here = 0;
  bool first = false, last = false;
  for (size_t c = 0; c < trainer.chunks().size(); ++c) {
    for (const auto& p : trainer.chunks()[c]->module().parameters()) {
      params += static_cast<double>(p.nbytes());
    }
    const int stage = plan.schedule.stage_of(context.pp_rank(), static_cast<int>(c));
    const auto [first_layer, last_layer] = plan.stage_layers[static_cast<size_t>(stage)];
    layers_here += static_cast<int>(last_layer - first_layer);
    first = first || stage == 0;
    last = last || stage + 1 == static_cast<int>(plan.stage_layers.size());
  }
  const ShardLevel level = shard_level(config);
  const bool zero3 = level == ShardLevel::kParameters;
  if (zero3) params = static_cast<double>(trainer.parameter_bytes());  // the slices
  const int64_t built = TensorMemory::live();
  // A forward first, so caches (the causal masks) are not counted as optimizer state.
  trainer.evaluate_local(batch(0).slice(0, config.train.global_batch / dp));
  const int64_t ready = TensorMemory::live();
  trainer.step(batch(1));
  const int64_t after_first = TensorMemory::live();
  TensorMemory::reset_peak();
  trainer.step(batch(2));
  const double grads_in_step = static_cast<double>(trainer.peak_gradient_bytes());
  const double params_in_step = static_cast<double>(trainer.peak_parameter_bytes());
  const double activations =
      static_cast<double>(TensorMemory::peak() - after_first) - (params_in_step - params);

  const StageMemory th =
      model_spec(config.model.arch).memory(config, context.tp_size(), layers_here, first, last);
  // Without sharding: what building the trainer added beyond the parameters (DDP's buckets) and
  // what the first step left behind (AdamW's moments). With it the moments exist from the start,
  // so the trainer's own count of them is taken and set apart.
  const bool shard = level != ShardLevel::kNone;
  const double optimizer = shard ? static_cast<double>(trainer.optimizer_state_bytes())
                                 : static_cast<double>(after_first - ready);
  const double grads = static_cast<double>(built - at_start) - params - (shard ? optimizer : 0);
  // ZeRO-1: the moments of this rank's slices (8/dp bytes per parameter), and DDP also holds the
  // averaged gradient slice next to its buckets (4/dp). ZeRO-2: the slice alone between steps;
  // in a step also the gradients of buckets not yet complete (about 2, never more than the
  // stage's gradient) and 2 buckets' buffers being sent (DdpOptions::shard_gradients).
  const bool sliced_grads = level == ShardLevel::kGradients || zero3;
  const double grads_theory = sliced_grads
                                  ? th.parameter_bytes / shards
                                  : th.parameter_bytes * (shard ? 1.0 + 1.0 / shards : 1.0);
  const double bucket = config.ddp.bucket_mb * 1024 * 1024;
  const double in_step_theory =
      sliced_grads ? grads_theory + std::min(th.parameter_bytes, 2 * bucket) + 2 * bucket
                   : grads_theory;
  // ZeRO-3: the slices, and at most the unit computing, the one prefetched and a tied head's
  // embedding whole at once (the planner's formula, plan/predict.cpp).
  const double embedding =
      4.0 * static_cast<double>(config.model.vocab * config.model.hidden) / context.tp_size();
  const double block =
      (th.parameter_bytes - (first || last ? embedding : 0)) / std::max(1, layers_here);
  // bf16 working weights: half of every parameter figure; the master joins the optimizer's.
  const MixedPrecision precision(config);
  const double working = precision.param_bytes() / 4.0;
  const bool master = precision.param_dtype() != torch::kFloat;
  const double params_theory = working * (zero3 ? th.parameter_bytes / shards : th.parameter_bytes);
  const double params_in_step_theory =
      zero3 ? params_theory + working * std::min(th.parameter_bytes, 2 * block + embedding)
            : params_theory;
  const double optimizer_theory = (master ? 3 : 2) * th.parameter_bytes / (shard ? shards : 1);
  // Rows: this rank's measured figures and the theory, gathered to rank 0 in rank order.
  torch::Tensor mine = torch::tensor(
      {params, params_theory, grads, grads_theory, optimizer, optimizer_theory, activations,
       th.activation_bytes, grads_in_step, in_step_theory, params_in_step, params_in_step_theory},
      torch::kDouble);
  const torch::Tensor all = world->all_gather(mine.unsqueeze(0));
  if (world->rank() == 0) {
    const double mib = 1024.0 * 1024.0;
    for (int r = 0; r < world->size(); ++r) {
      const auto row = all[r];
      const auto f = [&](int k) { return row[k].item<double>(); };
      std::printf(
          "%-6s dp%d tp%d pp%d %-9s %-8s rank %d | params %6.1f MiB (theory %6.1f), in a step "
          "%6.1f (<= %6.1f) | grads %6.1f (%6.1f), in a step %6.1f (<= %6.1f) | AdamW %6.1f "
          "(%6.1f) | activations %6.1f (%6.1f, measured/theory %.2f)\n",
          "memory", dp, context.tp_size(), context.pp_size(),
          choice_name(config.train.recompute).c_str(),
          (std::string(level == ShardLevel::kOptimizer   ? "zero1"
                       : level == ShardLevel::kGradients ? "zero2"
                       : zero3                           ? "zero3"
                                                         : "") +
           (config.parallel.sequence ? "+sp" : "") + (master ? "+bf16w" : "") +
           (config.parallel.context > 1
                ? str("+cp", config.parallel.context,
                      config.parallel.context_mode == ContextMode::kRing ? "ring" : "a2a")
                : std::string()))
              .c_str(),
          r, f(0) / mib, f(1) / mib, f(10) / mib, f(11) / mib, f(2) / mib, f(3) / mib, f(8) / mib,
          f(9) / mib, f(4) / mib, f(5) / mib, f(6) / mib, f(7) / mib, f(6) / f(7));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  reuse_freed_heap();  // as `triax train` does (core/heap_reuse.h)
  TensorMemory::install();
  std::vector<std::string> overrides;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--set") == 0) overrides.push_back(argv[++i]);
  }
  JobSteps job;
  job.prepare = [&](const LaunchEnv& launch) { return bench_config(overrides, launch.world_size); };
  job.run = [&](World& world, const JobStart& start, const ThreadChoice&, RankTable&) {
    run_bench(start.config, world.communicator());
  };
  return run_job(job, &argc, &argv);
}
