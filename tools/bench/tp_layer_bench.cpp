// Benchmark (not a test): forward + backward of one GPT layer at tp = the number of ranks, and
// the bytes it all-reduces per step next to the theoretical count.
//   mpirun -np T build/triax_bench_tp_layer [batch seq hidden heads iterations]
// Megatron's analysis: a tensor-parallel layer all-reduces b*s*h activations twice in forward
// (after attention's and the MLP's row-parallel projections) and twice in backward (the
// gradients entering the two column-parallel projections): 4*b*s*h*4 bytes in fp32 per rank,
// independent of tp, and nothing at tp = 1.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/compute_threads.h"
#include "core/heap_reuse.h"
#include "job/job_start.h"
#include "models/gpt.h"
#include "parallel/comm/counting_communicator.h"

using namespace triax;

namespace {

void run_bench(int64_t b, int64_t s, int64_t h, int64_t heads, int64_t iters,
               const std::shared_ptr<Communicator>& world) {
  CountingCommunicator tp(*world);
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  set_compute_threads(std::max(1, cores / tp.size()));

  GptOptions options;
  options.hidden = h;
  options.heads = heads;
  options.layers = 1;
  options.seq_len = s;
  TpDropout dropout(1, tp.rank());
  CausalBias causal_bias;
  torch::manual_seed(1);
  TransformerBlock block(options, tp, dropout, causal_bias);
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({b, s, h});
  const torch::Tensor probe = torch::randn({b, s, h});

  const auto step = [&] {
    torch::Tensor input = x.clone().requires_grad_();
    (block->forward(input) * probe).sum().backward();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up
  tp.reset();
  world->barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) step();
  world->barrier();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      iters;

  const double measured = static_cast<double>(tp.counts().all_reduce_bytes) / iters;
  const double theory = tp.size() == 1 ? 0.0 : 4.0 * b * s * h * 4;
  if (tp.rank() == 0) {
    std::printf(
        "tp=%d  b=%lld s=%lld h=%lld heads=%lld  threads/rank=%d  fwd+bwd %.2f ms/layer  "
        "all-reduce %.0f bytes/layer/step in %.1f calls (theory 4*b*s*h*4 = %.0f)\n",
        tp.size(), static_cast<long long>(b), static_cast<long long>(s), static_cast<long long>(h),
        static_cast<long long>(heads), torch::get_num_threads(), ms, measured,
        static_cast<double>(tp.counts().all_reduce_calls) / iters, theory);
  }
}

}  // namespace

int main(int argc, char** argv) {
  reuse_freed_heap();  // as `triax train` does (core/heap_reuse.h)
  const auto arg = [&](int i, int64_t fallback) {
    return argc > i ? std::atoll(argv[i]) : fallback;
  };
  const int64_t b = arg(1, 4), s = arg(2, 128), h = arg(3, 256), heads = arg(4, 8),
                iters = arg(5, 20);
  JobSteps job;
  job.prepare = [](const LaunchEnv&) { return Config{}; };  // the layer's sizes are arguments
  job.run = [&](World& world, const JobStart&, const ThreadChoice&, RankTable&) {
    run_bench(b, s, h, heads, iters, world.communicator());
  };
  return run_job(job, &argc, &argv);
}
