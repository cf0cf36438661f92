// Benchmark (not a test): data-parallel GPT training throughput on all ranks (dp = ranks):
//   mpirun -np N build/triax_bench_ddp [bucketed|simple] [steps]
// The GPT of the comparison with PyTorch (4 layers, hidden 128, 4 heads, sequence 64, vocabulary
// 256, batch 8 per rank, AdamW, one thread per rank, random tokens).
//  - bucketed: triax's DDP (buckets all-reduced during backward; the step waits on what is left);
//  - simple:   average every gradient after backward, one all-reduce per parameter
//              (ddp.bucketed: false).
// Both time GptTrainer::step, the step `triax train` runs.
// Prints tokens/s (global), step time, and the exposed communication per step (the time the
// optimizer step waits for gradients) with its share of the step.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/mpi_runtime.h"
#include "train/gpt_trainer.h"

using namespace triax;

int main(int argc, char** argv) {
  MpiRuntime mpi(&argc, &argv);
  const bool bucketed = argc < 2 || std::strcmp(argv[1], "simple") != 0;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 30;
  torch::set_num_threads(1);
  std::shared_ptr<Communicator> world = MpiCommunicator::world();
  const int dp = world->size();
  Config config;
  config.model.arch = "gpt";
  config.model.layers = 4;
  config.model.hidden = 128;
  config.model.heads = 4;
  config.model.seq_len = 64;
  config.model.vocab = 256;
  config.train.global_batch = 8 * dp;
  config.train.micro_batch = 8;
  config.train.optimizer = "adamw";
  config.train.lr = 1e-3;
  ParallelContext context(world, ParallelLayout::create(dp, 1, 1));
  const auto batch = [&](int step) {
    torch::manual_seed(step);
    return torch::randint(0, 256, {config.train.global_batch, config.model.seq_len + 1},
                          torch::kLong);
  };

  // Both modes run the trainer's own step; only the gradient sync differs (ddp.bucketed).
  config.ddp.bucketed = bucketed;
  GptTrainer trainer(plan_run(config, dp, DataCheck::kSkip), context);
  double exposed = 0;
  const auto step_fn = [&](int s) {
    trainer.step(batch(s));
    exposed += trainer.last_exposed_comm_seconds();
  };
  for (int s = 0; s < 3; ++s) step_fn(s);  // warm-up
  exposed = 0;
  world->barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) step_fn(s);
  world->barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double tokens =
      static_cast<double>(steps) * config.train.global_batch * config.model.seq_len;
  if (world->rank() == 0) {
    std::printf(
        "triax %-8s dp=%d  %8.0f tokens/s  step %6.1f ms  exposed comm %5.2f ms/step (%4.1f%% of "
        "step)\n",
        bucketed ? "bucketed" : "simple", dp, tokens / seconds, 1000 * seconds / steps,
        1000 * exposed / steps, 100 * exposed / seconds);
  }
  return 0;
}
