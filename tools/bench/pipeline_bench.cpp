// Benchmark (not a test): the GPT of CONFIG pipelined over all ranks (pp = number of ranks,
// tp = 1), every schedule at several micro-batch counts m:
//   mpirun -np P build/triax_bench_pipeline CONFIG [--set key=value ...]
// Prints the measured step time, the bubble measured from the trace next to the simulator's
// prediction (fed with the measured mean forward and backward times), the textbook
// (p-1)/(m+p-1), and each rank's peak activation memory (heap growth during the step).
// With schedule.trace set, writes each run's Chrome trace next to that path.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "core/config.h"
#include "core/error.h"
#include "core/heap_reuse.h"
#include "models/gpt_stages.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/mpi_runtime.h"
#include "schedules/pipeline_executor.h"
#include "schedules/pipeline_trace.h"
#include "schedules/schedule_check.h"

using namespace triax;

namespace {

struct Run {
  std::string name;
  int m, v;
};

double run_once(const Config& config, Communicator& pp, const Run& run, bool print) {
  const int p = pp.size();
  const int64_t mb = config.train.micro_batch > 0 ? config.train.micro_batch : 4;
  GptOptions whole =
      GptOptions::from_config(config.model, static_cast<uint64_t>(config.train.seed));
  const auto ranges = split_layers(whole.layers, p * run.v);
  auto tp = MpiCommunicator::self();  // tp = 1: each stage is whole on its rank
  std::vector<Gpt> chunks;
  for (int c = 0; c < run.v; ++c)
    chunks.emplace_back(gpt_stage_options(whole, c * p + pp.rank(), ranges), *tp);
  torch::manual_seed(1);
  const torch::Tensor tokens =
      torch::randint(0, whole.vocab, {run.m * mb, whole.seq_len + 1}, torch::kLong);
  StageFunctions stage;
  stage.forward = [&](int chunk, int i, const torch::Tensor& input) {
    Gpt& part = chunks[static_cast<size_t>(chunk)];
    return part->run_layers(
        input.defined() ? input
                        : part->embed(tokens.narrow(0, i * mb, mb).narrow(1, 0, whole.seq_len)));
  };
  stage.loss = [&](int i, const torch::Tensor& out) {
    return chunks.back()->loss_from_hidden(
        out, tokens.narrow(0, i * mb, mb).narrow(1, 1, whole.seq_len));
  };
  const Schedule schedule = make_schedule(run.name, p, run.m, run.v);
  PipelineExecutor executor(pp, {mb, whole.seq_len, whole.hidden});
  executor.set_tracing(true);
  double best_ms = 1e30;
  for (int step = 0; step < 4; ++step) {  // the first step warms up
    for (auto& chunk : chunks) chunk->zero_grad();
    pp.barrier();
    const auto start = std::chrono::steady_clock::now();
    executor.run(schedule, stage);
    torch::Tensor ms = torch::tensor(
        {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count()},
        torch::kDouble);
    pp.all_reduce(ms, ReduceOp::kMax);
    if (step > 0) best_ms = std::min(best_ms, ms.item<double>());
  }
  const PipelineTrace trace = gather_trace(pp, executor.trace());
  torch::Tensor peak = pp.all_gather(
      torch::tensor({static_cast<double>(executor.peak_activation_bytes())}, torch::kDouble));
  if (!print || pp.rank() != 0) return best_ms;
  double forward = 0, backward = 0;
  int nf = 0, nb = 0;
  for (const auto& events : trace) {
    for (const auto& e : events) {
      if (e.kind == ActionKind::kForward) forward += e.end_us - e.start_us, ++nf;
      if (e.kind == ActionKind::kBackward) backward += e.end_us - e.start_us, ++nb;
    }
  }
  const SimulationResult sim = simulate(schedule, {forward / nf, backward / nb, 0.0});
  std::string peaks;
  for (int r = 0; r < p; ++r)
    peaks += str(r ? " " : "", static_cast<int>(peak[r].item<double>() / (1 << 20) + 0.5));
  std::printf(
      "%-12s p=%d m=%-3d v=%d  step %8.1f ms  bubble measured %.3f  simulated %.3f  (p-1)/(m+p-1) "
      "%.3f  "
      "peak activation MiB per rank: %s\n",
      run.name.c_str(), p, run.m, run.v, best_ms, measured_bubble(trace), sim.bubble_fraction,
      double(p - 1) / (run.m + p - 1), peaks.c_str());
  if (!config.schedule.trace.empty()) {
    const std::string path =
        str(config.schedule.trace, ".", run.name, "-p", p, "-m", run.m, ".json");
    std::ofstream(path) << chrome_trace_json(trace,
                                             str(run.name, " p=", p, " m=", run.m, " v=", run.v));
    std::printf("  trace: %s\n", path.c_str());
  }
  return best_ms;
}

}  // namespace

int main(int argc, char** argv) {
  reuse_freed_heap();  // as `triax train` does (core/heap_reuse.h)
  MpiRuntime mpi(&argc, &argv);
  try {
    if (argc < 2)
      throw ConfigError("usage: mpirun -np P triax_bench_pipeline CONFIG [--set key=value ...]");
    std::vector<std::string> overrides;
    for (int i = 2; i + 1 < argc; i += 2) {
      if (std::string(argv[i]) != "--set")
        throw ConfigError(str("unexpected argument '", argv[i], "'"));
      overrides.push_back(argv[i + 1]);
    }
    const Config config = load_config(argv[1], overrides);
    auto pp = MpiCommunicator::world();
    const int p = pp->size();
    torch::set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / p));
    if (pp->rank() == 0) {
      std::printf(
          "GPT h=%lld layers=%lld seq=%lld, micro-batch %lld, pp=%d, %d thread(s)/rank, %u cores\n",
          static_cast<long long>(config.model.hidden), static_cast<long long>(config.model.layers),
          static_cast<long long>(config.model.seq_len),
          static_cast<long long>(config.train.micro_batch), p, torch::get_num_threads(),
          std::thread::hardware_concurrency());
    }
    for (int m : {p, 2 * p, 4 * p}) {
      for (const Run& run : {Run{"gpipe", m, 1}, Run{"1f1b", m, 1}, Run{"interleaved", m, 2}}) {
        if (config.model.layers < p * run.v) continue;
        run_once(config, *pp, run, true);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    MpiRuntime::abort(1);
  }
  return 0;
}
