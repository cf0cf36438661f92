// Benchmark (not a test): the planner against published training runs (docs/plan.md, "Checked
// against published runs"):
//   build/triax_bench_published [--device a100-80gb]
// For each row of Megatron-LM's Table 1 (plan/published_runs.h): the layout, the predicted step
// split, the predicted TFLOP/s per GPU beside the published one and the error; then the mean
// absolute error and the worst row, beside the goals (every row within 10%, mean within 7%).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include "plan/published_runs.h"

using namespace triax;

int main(int argc, char** argv) {
  std::string name = "a100-80gb";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0) name = argv[i + 1];
  }
  try {
    const GpuModel device = find_gpu(name);
    std::printf("Megatron-LM Table 1 (Narayanan et al., SC 2021) on %s\n",
                device.describe().c_str());
    std::printf("%-8s %3s %3s %3s %5s %3s %5s %9s %7s %7s %7s %7s %8s %8s %7s\n", "model", "tp",
                "pp", "dp", "gpus", "v", "batch", "step s", "bubble", "tp+dp", "optim", "peakGiB",
                "pred TF", "paper TF", "error");
    double total = 0, worst = 0;
    const char* worst_name = "";
    for (const PublishedRun& run : megatron_table1()) {
      const RunCheck check = check_published_run(run, device);
      const Prediction& p = check.prediction;
      const double error = 100 * check.error;
      total += std::fabs(error);
      if (std::fabs(error) > std::fabs(worst)) worst = error, worst_name = run.name;
      std::printf(
          "%-8s %3d %3d %3d %5d %3d %5lld %9.2f %6.1f%% %6.1f%% %6.1f%% %7.1f %8.1f %8.0f "
          "%+6.1f%%\n",
          run.name, run.tp, run.pp, run.dp, run.tp * run.pp * run.dp, run.chunks,
          static_cast<long long>(run.global_batch), p.step_seconds, 100 * p.bubble / p.step_seconds,
          100 * p.communication() / p.step_seconds, 100 * p.optimizer / p.step_seconds,
          p.peak_bytes / (1 << 30), check.predicted_tflops_per_gpu, run.tflops_per_gpu, error);
      if (std::getenv("TRIAX_BENCH_MEMORY")) {
        for (size_t r = 0; r < p.memory.size(); r += std::max<size_t>(1, p.memory.size() - 1)) {
          const RankMemory& m = p.memory[r];
          std::printf(
              "    rank %zu GiB: weights %.1f grads %.1f optimizer %.1f activations %.1f (%d in "
              "flight)\n",
              r, m.parameters / (1 << 30), m.gradients / (1 << 30), m.optimizer / (1 << 30),
              m.activations / (1 << 30), m.in_flight);
        }
      }
    }
    const double mean = total / static_cast<double>(megatron_table1().size());
    std::printf("mean absolute error %.1f%% (goal <= 7%%); worst %s %+.1f%% (goal within 10%%)\n",
                mean, worst_name, worst);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "triax_bench_published: %s\n", e.what());
    return 1;
  }
}
