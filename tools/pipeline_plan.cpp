#include "tools/pipeline_plan.h"

#include <cstdio>

#include "core/batch_plan.h"
#include "core/error.h"
#include "models/gpt_stages.h"
#include "schedules/schedule_check.h"

namespace triax {

Schedule schedule_from_config(const Config& config, int dp) {
  const ScheduleConfig& s = config.schedule;
  int64_t m = s.microbatches;
  const BatchPlan plan = BatchPlan::create(config.train, dp);
  if (m == 0) {
    m = plan.num_microbatches;
  } else if (config.train.micro_batch != 0 && m != plan.num_microbatches) {
    throw ConfigError(str("schedule.microbatches: ", m,
                          " disagrees with train.global_batch / "
                          "(train.micro_batch * dp) = ",
                          config.train.global_batch, " / (", plan.micro_batch, " * ", dp,
                          ") = ", plan.num_microbatches, " (valid: 0 to derive it, or ",
                          plan.num_microbatches, ")"));
  }
  const int p = static_cast<int>(config.parallel.pipeline);
  const int v = static_cast<int>(s.chunks_per_rank);
  split_layers(config.model.layers, p * v, s.layer_boundaries);  // validates the boundaries
  Schedule schedule = make_schedule(s.name, p, static_cast<int>(m), v);
  check_schedule(schedule);
  return schedule;
}

std::string describe_schedule(const Config& config, const Schedule& schedule) {
  const auto ranges =
      split_layers(config.model.layers, schedule.total_stages(), config.schedule.layer_boundaries);
  std::string text = schedule.table() + "  stage layers:";
  for (size_t i = 0; i < ranges.size(); ++i)
    text += str(" s", i, "=[", ranges[i].first, ",", ranges[i].second, ")");
  const double chunk = 1.0 / schedule.chunks;
  const SimulationResult sim = simulate(schedule, {chunk, chunk, 0.0});
  char line[160];
  std::snprintf(
      line, sizeof(line),
      "\n  simulated bubble %.3f (equal forward/backward costs); peak activations per rank: ",
      sim.bubble_fraction);
  return text + line + join(sim.peak_activations, " ") + " micro-batch chunks\n";
}

}  // namespace triax
