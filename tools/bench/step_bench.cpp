// Benchmark (not a test): where one training step's time goes, phase by phase and op by op, on
// the trainer's own step (Trainer::step, what `triax train` runs):
//   mpirun -np N build/triax_bench_step [CONFIG.yaml] [--set KEY=VALUE ...] [--steps S] [--brief]
// Without a config: the GPT of the PyTorch comparison (4 layers, hidden 128, 4 heads, sequence
// 64, vocabulary 256, micro-batch 8 per dp rank, AdamW, no dropout), dp = N; its Python twin is
// tools/bench/pytorch_step.py, which prints the same table for PyTorch. Threads per rank:
// train.threads, else 1. Prints, for rank 0 and the slowest rank, the median of each phase over
// S timed steps (forward, backward, DDP wait, gradient fix-ups, optimizer with the clip, loss
// sync; train/trainer.h),
// then the per-op self times of 3 further steps under LibTorch's profiler (core/op_profile.h).
// --brief: one line (tokens/s, step time, exposed DDP communication), for scripts that compare
// runs (tools/bench/ddp_vs_pytorch.sh).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/compute_threads.h"
#include "core/heap_reuse.h"
#include "core/op_profile.h"
#include "core/timing.h"
#include "job/job_start.h"
#include "models/gpt_spec.h"
#include "parallel/cp/exchange_wait.h"
#include "train/trainer.h"

using namespace triax;

namespace {

Config comparison_model() {
  Config config;
  config.model.arch = ModelKind::kGpt;
  config.model.layers = 4;
  config.model.hidden = 128;
  config.model.heads = 4;
  config.model.seq_len = 64;
  config.model.vocab = 256;
  config.train.micro_batch = 8;
  config.train.optimizer = OptimizerKind::kAdamW;
  config.train.lr = 1e-3;
  config.train.threads = 1;
  return config;
}

struct Args {
  std::string path;
  std::vector<std::string> overrides;
  int steps = 30;
  bool brief = false;
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
      args.overrides.push_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      args.steps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--brief") == 0) {
      args.brief = true;
    } else {
      args.path = argv[i];
    }
  }
  return args;
}

// CONFIG's model and batch, else the comparison model at micro-batch 8 per dp rank.
Config bench_config(const Args& args, int world_size) {
  if (!args.path.empty()) return load_config(args.path, args.overrides);
  Config config = parse_config(to_yaml(comparison_model()), args.overrides);
  const int model_ranks = static_cast<int>(config.parallel.context * config.parallel.tensor *
                                           config.parallel.pipeline);  // dp = world / this
  config.train.global_batch = config.train.micro_batch * (world_size / std::max(1, model_ranks));
  return config;
}

void run_bench(const Args& args, const Config& config, const std::shared_ptr<Communicator>& world) {
  const int steps = args.steps;
  const bool brief = args.brief;
  // Pinned, unlike `triax train`'s choice: the PyTorch twin runs the same count.
  set_compute_threads(static_cast<int>(config.train.threads > 0 ? config.train.threads : 1));
  const RunPlan plan = plan_run(config, world->size(), DataCheck::kSkip);
  ParallelContext context(world, plan.layout);
  Trainer trainer(plan, context);
  const auto batch = [&](int step) { return random_token_batch(config, step); };
  for (int s = 0; s < 3; ++s) trainer.step(batch(s));  // warm-up
  std::vector<std::vector<double>> phases(9);
  torch::Tensor ends = torch::zeros({steps}, torch::kDouble);
  world->barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    const double exchanged = exchange_wait_seconds();
    trainer.step(batch(s));
    const StepPhases& p = trainer.last_phases();
    // The last: what ZeRO-3's forward and backward waited for all-gathers (0 at other levels).
    // Then what context parallelism's attention waited for its exchanges.
    const double values[] = {p.forward,
                             p.backward,
                             p.ddp_wait,
                             p.clip,
                             p.optimizer,
                             p.loss_sync,
                             p.total,
                             trainer.gather_wait_seconds(),
                             exchange_wait_seconds() - exchanged};
    for (size_t k = 0; k < phases.size(); ++k) phases[k].push_back(values[k]);
    ends[s] = p.backward_end;
  }
  world->barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Per phase: rank 0's median and the largest median of any rank.
  torch::Tensor mine = torch::empty({static_cast<int64_t>(phases.size())}, torch::kDouble);
  for (size_t k = 0; k < phases.size(); ++k) mine[static_cast<int64_t>(k)] = median(phases[k]);
  torch::Tensor slowest = mine.clone();
  world->all_reduce(slowest, ReduceOp::kMax);
  // Skew: per step, how much later the last rank ended backward than the first (the part of a
  // DDP wait that is a peer still computing, not communication).
  torch::Tensor last_end = ends.clone();
  torch::Tensor first_end = -ends;
  world->all_reduce(last_end, ReduceOp::kMax);
  world->all_reduce(first_end, ReduceOp::kMax);
  const torch::Tensor spread = last_end + first_end;
  const double skew =
      median(std::vector<double>(spread.data_ptr<double>(), spread.data_ptr<double>() + steps));

  const double tokens = static_cast<double>(steps) *
                        static_cast<double>(config.train.global_batch) *
                        static_cast<double>(config.model.seq_len);
  if (brief) {
    if (world->rank() == 0) {
      std::printf(
          "triax dp=%d%s tp=%d pp=%d threads=%d %s: %8.0f tokens/s  step %6.1f ms  "
          "exposed comm %5.2f ms (%4.1f%%), gather wait %5.2f ms, cp wait %5.2f ms, skew %5.2f "
          "ms\n",
          plan.layout.dp_size(),
          plan.layout.cp_size() > 1
              ? str(" cp=", plan.layout.cp_size(),
                    config.parallel.context_mode == ContextMode::kRing ? "(ring)" : "(all_to_all)")
                    .c_str()
              : "",
          plan.layout.tp_size(), plan.layout.pp_size(), torch::get_num_threads(),
          config.ddp.bucketed ? "bucketed" : "per-parameter", tokens / seconds,
          1000 * seconds / steps, 1000 * slowest[2].item<double>(),
          100 * slowest[2].item<double>() / slowest[6].item<double>(),
          1000 * slowest[7].item<double>(), 1000 * slowest[8].item<double>(), 1000 * skew);
    }
    return;
  }

  // Profile a few further steps (the profiler slows every op, so not the timed ones).
  const int profiled = 3;
  OpProfile profile;
  const auto profile_start = std::chrono::steady_clock::now();
  for (int s = 0; s < profiled; ++s) trainer.step(batch(steps + s));
  const double profile_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - profile_start)
          .count();
  const std::vector<OpTotal> ops = profile.stop();

  if (world->rank() == 0) {
    std::printf(
        "triax step: dp %d x cp %d x tp %d x pp %d, %d thread(s) per rank, global batch %lld, "
        "%d steps: %.0f tokens/s, step %.1f ms\n",
        plan.layout.dp_size(), plan.layout.cp_size(), plan.layout.tp_size(), plan.layout.pp_size(),
        torch::get_num_threads(), static_cast<long long>(config.train.global_batch), steps,
        tokens / seconds, 1000 * seconds / steps);
    const char* names[] = {"forward (incl. loss)",
                           "backward (+hooks, p2p)",
                           "DDP wait (exposed)",
                           "grad fix-ups (SP, tied)",
                           "optimizer (norm+update)",
                           "loss sync",
                           "step total",
                           "ZeRO-3 gather wait",
                           "cp exchange wait"};
    static_assert(sizeof(names) / sizeof(names[0]) == 9, "one name per phase");
    std::printf("%-24s %12s %7s %14s\n", "phase", "rank 0 ms", "share", "slowest rank ms");
    const double total = mine[6].item<double>();
    for (size_t k = 0; k < phases.size(); ++k) {
      const double ms = 1000 * mine[static_cast<int64_t>(k)].item<double>();
      std::printf("%-24s %12.2f %6.1f%% %14.2f\n", names[k], ms, 100 * ms / (1000 * total),
                  1000 * slowest[static_cast<int64_t>(k)].item<double>());
    }
    std::printf("ranks ending backward apart (skew; part of any DDP wait): %.2f ms median\n",
                1000 * skew);
    std::printf("\nrank 0, %d profiled steps (the profiler adds time to each op):\n%s", profiled,
                format_op_table(ops, 18, profiled, profile_us).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  reuse_freed_heap();  // as `triax train` does (core/heap_reuse.h)
  const Args args = parse_args(argc, argv);
  JobSteps job;
  job.prepare = [&](const LaunchEnv& launch) { return bench_config(args, launch.world_size); };
  job.run = [&](World& world, const JobStart& start, const ThreadChoice&, RankTable&) {
    run_bench(args, start.config, world.communicator());
  };
  return run_job(job, &argc, &argv);
}
