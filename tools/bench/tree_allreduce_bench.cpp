// Benchmark (not a test): the tree all-reduce (parallel/comm/tree_all_reduce.h: a fixed
// association, the same bits on every rank and run) against the backend's own all-reduce (MPI's
// or Gloo's: whatever association its algorithm picks), on the sizes data parallelism moves: the
// main GPT's gradient and DDP's 25 MiB bucket, and a small tensor where latency rules.
//   mpirun -np N build/triax_bench_tree_allreduce [--reps R]
// Rounds interleave the two (backend, tree, backend, tree, ...); the figure is the median over
// rounds of the slowest rank's time. Goal (issue 40): layout-invariant numerics at most 5% slower
// per training step at dp 2; the collective's ratio is printed next to that goal.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/timing.h"
#include "job/job_start.h"
#include "parallel/comm/tree_all_reduce.h"

using namespace triax;

namespace {

void run_bench(int reps, Communicator& comm) {
  const bool root = comm.rank() == 0;
  if (root) {
    std::printf("%d ranks, %s backend; medians of %d rounds (slowest rank per round)\n",
                comm.size(), comm.backend().c_str(), reps);
    std::printf("%-34s %12s %12s %8s\n", "tensor", "backend ms", "tree ms", "tree/backend");
  }
  const std::vector<std::pair<const char*, int64_t>> sizes = {
      {"4 KiB (latency)", 1024},
      {"main GPT gradient (3.2 MiB)", 834304},
      {"DDP bucket (25 MiB)", 25 * 1024 * 1024 / 4}};
  for (const auto& [name, numel] : sizes) {
    torch::manual_seed(comm.rank());
    const torch::Tensor input = torch::randn({numel});
    std::vector<double> backend_times, tree_times;
    for (int r = 0; r < reps + 2; ++r) {
      for (const bool tree : {false, true}) {
        torch::Tensor t = input.clone();
        comm.barrier();
        const auto start = SteadyClock::now();
        if (tree) {
          tree_all_reduce(comm, t);
        } else {
          comm.all_reduce(t, ReduceOp::kSum);
        }
        const double seconds = seconds_since(start);
        if (r >= 2) (tree ? tree_times : backend_times).push_back(seconds);  // 2 warm-up rounds
      }
    }
    const double backend = median(comm.max_over_ranks(backend_times));
    const double tree = median(comm.max_over_ranks(tree_times));
    if (root) {
      std::printf("%-34s %12.3f %12.3f %7.2fx\n", name, backend * 1e3, tree * 1e3, tree / backend);
    }
  }
  if (root) {
    std::printf(
        "goal: layout_invariant numerics <= 5%% slower per training step at dp 2 (the step, not "
        "this collective alone, is the goal's measure)\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(3, std::atoi(argv[++i]));
  }
  JobSteps job;
  job.prepare = [](const LaunchEnv&) { return Config{}; };
  job.run = [&](World& world, const JobStart&, const ThreadChoice&, RankTable&) {
    run_bench(reps, *world.communicator());
  };
  return run_job(job, &argc, &argv);
}
