// Benchmark (not a test): every pipeline schedule as `triax train` runs it (Trainer::step: the
// executor, DDP, clipping and AdamW), over all ranks as pipeline stages (pp = ranks, tp = 1),
// at m = 4, 8, 16 micro-batches:
//   mpirun -np P build/triax_bench_pipeline CONFIG [--rounds R] [--set key=value ...]
// Per row: tokens/s and step time (medians over rounds, schedules interleaved within a round),
// the idle fraction measured from the trainer's own trace, the simulator's prediction from that
// trace's measured mean F, B, I and W times, each rank's compute time (stage imbalance) and its
// peak activation memory (heap growth while the step runs). Then the goals of issue 28: ZB-H1's
// idle <= 0.4x 1F1B's and ZB-V's <= 0.2x at p = 4, m = 8; ZB-V's peak activations <= 1F1B's.
// With schedule.trace set, writes each row's Chrome trace next to that path.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <tuple>

#include "core/compute_threads.h"
#include "core/config.h"
#include "core/error.h"
#include "core/heap_reuse.h"
#include "core/timing.h"
#include "job/job_start.h"
#include "models/gpt_spec.h"
#include "parallel/parallel_context.h"
#include "schedules/pipeline_trace.h"
#include "schedules/schedule_check.h"
#include "train/run_plan.h"
#include "train/trainer.h"

using namespace triax;

namespace {

struct Row {
  std::string name;
  int m = 0, v = 1;
  std::vector<double> step_ms;
  double idle = 0, simulated = 0;
  std::string costs;
  std::vector<double> busy_ms;
  std::vector<double> w_tail_ms;  // W run after the rank's last I: what the step boundary waits for
  std::vector<int64_t> peak_bytes;
  PipelineTrace trace;
};

// Mean time of each compute kind on each rank in the trace (seconds), for the simulator.
SimulationCosts measured_costs(const PipelineTrace& trace) {
  SimulationCosts c;
  c.transfer = 0;
  const ActionKind kinds[4] = {ActionKind::kForward, ActionKind::kBackward,
                               ActionKind::kBackwardInput, ActionKind::kBackwardWeight};
  for (const auto& events : trace) {
    std::array<double, 4> sum{}, mean{};
    std::array<int, 4> count{};
    for (const auto& e : events) {
      for (int k = 0; k < 4; ++k) {
        if (e.kind != kinds[k]) continue;
        sum[k] += (e.end_us - e.start_us) * 1e-6;
        ++count[k];
      }
    }
    for (int k = 0; k < 4; ++k) mean[k] = count[k] ? sum[k] / count[k] : 0.0;
    c.per_rank.push_back(mean);
  }
  return c;
}

// The time a message takes, from the trace: for each receive that was posted before its send
// (so it waited for the message itself), the receive's end minus the send's start; the median.
double measured_transfer(const PipelineTrace& trace, const Schedule& schedule) {
  std::map<std::tuple<bool, int, int>, double> sent;  // (gradient, receiving stage, mb) -> start
  for (size_t r = 0; r < trace.size(); ++r) {
    for (const auto& e : trace[r]) {
      const int s = schedule.stage_of(static_cast<int>(r), e.chunk);
      if (e.kind == ActionKind::kSendActivation) sent[{false, s + 1, e.microbatch}] = e.start_us;
      if (e.kind == ActionKind::kSendGrad) sent[{true, s - 1, e.microbatch}] = e.start_us;
    }
  }
  std::vector<double> delays;
  for (size_t r = 0; r < trace.size(); ++r) {
    for (const auto& e : trace[r]) {
      const bool grad = e.kind == ActionKind::kRecvGrad;
      if (!grad && e.kind != ActionKind::kRecvActivation) continue;
      const auto it =
          sent.find({grad, schedule.stage_of(static_cast<int>(r), e.chunk), e.microbatch});
      // (Each rank's clock starts at its own step start: a negative gap is clock offset.)
      if (it != sent.end() && e.start_us <= it->second && e.end_us >= it->second) {
        delays.push_back(e.end_us - it->second);
      }
    }
  }
  return delays.empty() ? 0.0 : median(delays) * 1e-6;
}

// "F 2.1 I 1.9 W 1.6" (ms, means over ranks) or "F .. B ..".
std::string cost_summary(const SimulationCosts& c) {
  std::array<double, 4> mean{};
  for (const auto& r : c.per_rank) {
    for (int k = 0; k < 4; ++k) mean[k] += r[k] / static_cast<double>(c.per_rank.size());
  }
  if (mean[1] > 0)
    return str("F ", std::round(mean[0] * 1e4) / 10, " B ", std::round(mean[1] * 1e4) / 10);
  return str("F ", std::round(mean[0] * 1e4) / 10, " I ", std::round(mean[2] * 1e4) / 10, " W ",
             std::round(mean[3] * 1e4) / 10, " msg ", std::round(c.transfer * 1e5) / 100);
}

void run_row(const Config& base, std::shared_ptr<Communicator> world, Row& row, int steps,
             bool keep_trace) {
  const int p = world->size();
  Config config = base;
  config.parallel.tensor = 1;
  config.parallel.pipeline = p;
  config.parallel.data = 1;
  config.train.global_batch = row.m * config.train.micro_batch;
  config.schedule.name = choice_from<ScheduleKind>(row.name);
  config.schedule.chunks_per_rank = row.v;
  config.schedule.microbatches = 0;
  const RunPlan plan = plan_run(config, p, DataCheck::kSkip);
  ParallelContext context(world, plan.layout);
  Trainer trainer(plan, context);
  const auto batch = [&](int step) { return random_token_batch(config, step); };
  for (int step = 0; step <= steps; ++step) {  // step 0 warms up
    const bool traced = keep_trace && step == steps;
    trainer.set_tracing(traced);
    world->barrier();
    const auto start = std::chrono::steady_clock::now();
    trainer.step(batch(step));
    torch::Tensor ms = torch::tensor(
        {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count()},
        torch::kDouble);
    world->all_reduce(ms, ReduceOp::kMax);
    if (step > 0) row.step_ms.push_back(ms.item<double>());
    if (traced) {
      row.trace = gather_trace(context.pp(), trainer.trace());
      const torch::Tensor peaks =
          context.pp().all_gather(torch::tensor({trainer.peak_activation_bytes()}, torch::kLong));
      row.peak_bytes.clear();
      for (int r = 0; r < p; ++r) row.peak_bytes.push_back(peaks[r].item<int64_t>());
      row.idle = measured_bubble(row.trace);
      SimulationCosts costs = measured_costs(row.trace);
      costs.transfer = measured_transfer(row.trace, trainer.schedule());
      row.simulated = simulate(trainer.schedule(), costs).bubble_fraction;
      row.costs = cost_summary(costs);
      row.busy_ms.clear();
      for (double s : busy_seconds(row.trace)) row.busy_ms.push_back(s * 1e3);
      row.w_tail_ms.clear();
      for (const auto& events : row.trace) {
        double tail = 0;
        for (const auto& e : events) {
          if (e.kind == ActionKind::kBackwardInput) tail = 0;
          if (e.kind == ActionKind::kBackwardWeight) tail += (e.end_us - e.start_us) * 1e-3;
        }
        row.w_tail_ms.push_back(tail);
      }
    }
  }
}

Config bench_config(int argc, char** argv, int* rounds) {
  if (argc < 2) {
    throw ConfigError(
        "usage: mpirun -np P triax_bench_pipeline CONFIG [--rounds R] [--set key=value ...]");
  }
  std::vector<std::string> overrides;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) {
      *rounds = std::max(1, std::atoi(argv[i + 1]));
    } else if (std::strcmp(argv[i], "--set") == 0) {
      overrides.push_back(argv[i + 1]);
    } else {
      throw ConfigError(str("unexpected argument '", argv[i], "'"));
    }
  }
  return load_config(argv[1], overrides);
}

void run_bench(const Config& config, int rounds, const std::shared_ptr<Communicator>& world) {
  const int p = world->size();
  set_compute_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / p));
  const bool root = world->rank() == 0;
  if (root) {
    std::printf(
        "GPT h=%lld layers=%lld seq=%lld, micro-batch %lld, pp=%d (tp 1, dp 1), %d "
        "thread(s)/rank, "
        "%u cores%s; medians of %d rounds\n",
        static_cast<long long>(config.model.hidden), static_cast<long long>(config.model.layers),
        static_cast<long long>(config.model.seq_len),
        static_cast<long long>(config.train.micro_batch), p, torch::get_num_threads(),
        std::thread::hardware_concurrency(),
        p > static_cast<int>(std::thread::hardware_concurrency()) ? " (ranks oversubscribed)" : "",
        rounds);
  }
  std::vector<Row> rows;
  for (int m : {4, 8, 16}) {
    for (const auto& [name, v] : std::vector<std::pair<std::string, int>>{
             {"gpipe", 1}, {"1f1b", 1}, {"interleaved", 2}, {"zbh1", 1}, {"zbv", 2}}) {
      if (config.model.layers < p * v || (name == "interleaved" && m % p != 0)) continue;
      Row row;
      row.name = name;
      row.m = m;
      row.v = v;
      rows.push_back(row);
    }
  }
  for (int round = 0; round < rounds; ++round) {
    for (Row& row : rows) run_row(config, world, row, 3, round == rounds - 1);
  }
  if (!root) return;
  const double tokens = static_cast<double>(config.train.micro_batch * config.model.seq_len);
  std::printf("%-12s %3s %2s %10s %9s %6s %6s %6s  %-18s %-16s %s\n", "schedule", "m", "v",
              "tokens/s", "step ms", "idle", "sim", "err", "busy ms per rank", "peak MiB per rank",
              "mean ms per action");
  std::map<std::pair<std::string, int>, const Row*> by;
  for (const Row& row : rows) {
    by[{row.name, row.m}] = &row;
    const double ms = median(row.step_ms);
    std::string busy, peaks;
    for (size_t r = 0; r < row.busy_ms.size(); ++r) {
      busy += str(r ? " " : "", static_cast<int>(row.busy_ms[r] + 0.5));
      peaks += str(r ? " " : "", static_cast<int>(row.peak_bytes[r] / (1 << 20) + 0.5));
    }
    std::printf("%-12s %3d %2d %10.0f %9.1f %6.3f %6.3f %+5.0f%%  %-18s %-16s %s\n",
                row.name.c_str(), row.m, row.v, tokens * row.m / (ms * 1e-3), ms, row.idle,
                row.simulated, 100 * (row.idle - row.simulated) / std::max(row.simulated, 1e-9),
                busy.c_str(), peaks.c_str(), row.costs.c_str());
    if (!config.schedule.trace.empty()) {
      const std::string path =
          str(config.schedule.trace, ".", row.name, "-p", p, "-m", row.m, ".json");
      std::ofstream(path) << chrome_trace_json(row.trace,
                                               str(row.name, " p=", p, " m=", row.m, " v=", row.v));
    }
  }
  const auto* one = by[{"1f1b", 8}];
  const auto* h1 = by[{"zbh1", 8}];
  const auto* zv = by[{"zbv", 8}];
  if (one && h1 && zv) {
    const bool goal_row = p == 4;
    std::printf(
        "m=8: idle ZB-H1 / 1F1B %.2f (goal <= 0.4 at p = 4%s), ZB-V / 1F1B %.2f (goal <= 0.2 at "
        "p = 4%s)\n",
        h1->idle / one->idle, goal_row ? (h1->idle <= 0.4 * one->idle ? ": met" : ": not met") : "",
        zv->idle / one->idle,
        goal_row ? (zv->idle <= 0.2 * one->idle ? ": met" : ": not met") : "");
    bool fits = true;
    for (int r = 0; r < p; ++r) fits = fits && zv->peak_bytes[r] <= one->peak_bytes[r];
    std::printf("m=8: ZB-V peak activation memory <= 1F1B's on every rank: %s\n",
                fits ? "yes (goal met)" : "no (goal not met)");
    // Clipping needs every W: the step ends when each rank's last W has run.
    std::string tails;
    for (size_t r = 0; r < h1->w_tail_ms.size(); ++r) {
      tails += str(r ? " " : "", std::round(h1->w_tail_ms[r] * 10) / 10);
    }
    std::printf(
        "m=8: ZB-H1's W after each rank's last I (ms per rank; the step boundary waits for "
        "them, as exact clipping needs every gradient): %s of a %.1f ms step\n",
        tails.c_str(), median(h1->step_ms));
  }
}

}  // namespace

int main(int argc, char** argv) {
  reuse_freed_heap();  // as `triax train` does (core/heap_reuse.h)
  int rounds = 3;
  JobSteps job;
  job.prepare = [&](const LaunchEnv&) { return bench_config(argc, argv, &rounds); };
  job.run = [&](World& world, const JobStart& start, const ThreadChoice&, RankTable&) {
    run_bench(start.config, rounds, world.communicator());
  };
  return run_job(job, &argc, &argv);
}
