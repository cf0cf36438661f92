// defines: triax::schedule_from_config, triax::describe_schedule
//
// The pipeline schedule a configuration asks for at a given dp: micro-batches from
// schedule.microbatches, or global_batch / (micro_batch * dp); the layer split of
// schedule.layer_boundaries (or balanced); all validated with the YAML keys in the messages, and
// checked as a schedule, before any communication.
#pragma once

#include <string>

#include "core/config.h"
#include "schedules/schedule.h"

namespace triax {

/// Throws ConfigError naming the keys when the schedule cannot be built.
Schedule schedule_from_config(const Config& config, int dp);

/// The schedule table, its stage split and its simulated bubble and activation peaks
/// (equal forward/backward costs), for `triax config`.
std::string describe_schedule(const Config& config, const Schedule& schedule);

}  // namespace triax
