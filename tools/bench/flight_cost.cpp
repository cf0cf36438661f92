// Benchmark (not a test): what the flight recorder and the watchdog cost per operation, next to
// what one training step posts. Usage: build/triax_bench_flight [RUN_DIR_WITH_FLIGHT_RECORDS]
// Prints ns per recorded operation (begin + end, with a label) and, given a run's flight dump,
// the operations per step and their share of that run's step time; the goal is <= 1 %.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/flight_recorder.h"

using namespace triax;

int main(int argc, char** argv) {
  constexpr int kOps = 2000000;
  flight::Event event;
  event.kind = "all-reduce";
  event.group = "dp [0,2]";
  event.bytes = 1 << 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kOps; ++i) {
    const flight::Label label("DDP bucket 3 of 4");
    flight::end(flight::begin(event));
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kOps;
  std::printf("flight recorder: %.0f ns per operation (begin + end + label)\n", ns);
  if (argc < 2) return 0;
  // Operations per step and step time from rank 0's dump of a run (events carry step + times).
  std::ifstream in(std::string(argv[1]) + "/flight/rank_0.json");
  std::string line;
  long events = 0, first_step = -1, last_step = -1;
  double first_start = 0, last_start = 0;
  while (std::getline(in, line)) {
    const auto at = line.find("\"step\": ");
    const auto ts = line.find("\"start_s\": ");
    if (line.find("\"id\": ") == std::string::npos || at == std::string::npos) continue;
    const long step = std::stol(line.substr(at + 8));
    const double t = std::stod(line.substr(ts + 11));
    if (step < 2) continue;  // skip start-up
    if (first_step < 0) first_step = step, first_start = t;
    last_step = step, last_start = t;
    ++events;
  }
  if (last_step <= first_step) return 0;
  const double steps = static_cast<double>(last_step - first_step);
  const double step_s = (last_start - first_start) / steps;
  const double per_step = static_cast<double>(events) / (steps + 1);
  std::printf(
      "rank 0 of %s: %.0f operations per step, step %.1f ms -> recorder %.4f %% of the "
      "step (goal <= 1 %%)\n",
      argv[1], per_step, 1e3 * step_s, 100.0 * per_step * ns * 1e-9 / step_s);
  return 0;
}
