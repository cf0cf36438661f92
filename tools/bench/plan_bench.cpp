// Benchmark (not a test): one planned layout as `triax train` runs it, measured for the
// planner's accuracy benchmark (tools/bench/plan_accuracy.sh):
//   mpirun -np N build/triax_bench_plan CONFIG [--set KEY=VALUE ...] [--steps S]
// Trains S steps (after 2 warm-up steps) of random tokens with the trainer's own step
// (Trainer::step), threads per rank chosen as `triax train` chooses them, and prints one line:
//   step_s=MEDIAN pp_peak_bytes=B0;B1;...
// MEDIAN: the median over the timed steps of the slowest rank's step time. B_r: the most bytes
// of live tensors (core/tensor_memory.h: parameters, gradients, optimizer state, activations)
// any rank of pipeline stage r held during the timed steps — what the planner predicts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/heap_reuse.h"
#include "core/tensor_memory.h"
#include "job/job_start.h"
#include "models/gpt_spec.h"
#include "parallel/node_topology.h"
#include "train/trainer.h"

using namespace triax;

namespace {

void run_bench(const Config& config, int steps, const std::shared_ptr<Communicator>& world) {
  const RunPlan plan = plan_run(config, world->size(), DataCheck::kSkip);
  ParallelContext context(world, plan.layout, local_node_key(-1), config.ddp.hierarchical);
  Trainer trainer(plan, context);
  const auto batch = [&](int step) { return random_token_batch(config, step); };
  for (int s = 0; s < 2; ++s) trainer.step(batch(s));  // warm-up; the optimizer's state exists
  TensorMemory::reset_peak();
  std::vector<double> times;
  for (int s = 0; s < steps; ++s) {
    world->barrier();
    const auto start = std::chrono::steady_clock::now();
    trainer.step(batch(2 + s));
    torch::Tensor t = torch::tensor(
        {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
        torch::kDouble);
    world->all_reduce(t, ReduceOp::kMax);
    times.push_back(t.item<double>());
  }
  std::sort(times.begin(), times.end());
  // The fullest rank of each pipeline stage.
  const int pp = plan.layout.pp_size();
  torch::Tensor peaks = torch::zeros({pp}, torch::kDouble);
  peaks[context.pp().rank()] = static_cast<double>(TensorMemory::peak());
  world->all_reduce(peaks, ReduceOp::kMax);
  if (world->rank() == 0) {
    std::string list;
    for (int r = 0; r < pp; ++r) {
      list += (r ? ";" : "") + std::to_string(static_cast<int64_t>(peaks[r].item<double>()));
    }
    std::printf("step_s=%.6f pp_peak_bytes=%s\n", times[times.size() / 2], list.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  reuse_freed_heap();  // as `triax train` does (core/heap_reuse.h)
  TensorMemory::install();
  std::string path;
  std::vector<std::string> overrides;
  int steps = 6;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
      overrides.push_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = std::max(1, std::atoi(argv[++i]));
    } else {
      path = argv[i];
    }
  }
  // The job's start-up chooses the threads per rank as `triax train` does.
  JobSteps job;
  job.prepare = [&](const LaunchEnv&) { return load_config(path, overrides); };
  job.run = [&](World& world, const JobStart& start, const ThreadChoice&, RankTable&) {
    run_bench(start.config, steps, world.communicator());
  };
  return run_job(job, &argc, &argv);
}
