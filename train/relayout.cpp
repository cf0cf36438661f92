#include "train/relayout.h"

#include <sstream>

#include "checkpoint/convert.h"
#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

// The i-th value of a relayout list, or nothing when the list is empty (keep).
template <typename T>
std::optional<T> entry(const std::vector<T>& list, size_t i) {
  if (list.empty()) return std::nullopt;
  return list[i];
}

std::string describe(const LayoutChange& change) {
  std::vector<std::string> parts;
  if (change.tensor) parts.push_back(str("tensor ", *change.tensor));
  if (change.pipeline) parts.push_back(str("pipeline ", *change.pipeline));
  if (change.chunks_per_rank) parts.push_back(str("chunks_per_rank ", *change.chunks_per_rank));
  if (change.schedule) parts.push_back(str("schedule ", *change.schedule));
  if (change.frozen_layers) parts.push_back(str("frozen_layers ", *change.frozen_layers));
  return parts.empty() ? std::string("no change named") : join(parts, ", ");
}

int64_t positive_integer(const std::string& key, const std::string& value,
                         const std::string& path) {
  size_t used = 0;
  int64_t parsed = 0;
  try {
    parsed = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || parsed < 1) {
    throw ConfigError(
        str(path, ": ", key, ": '", value, "' is not a positive integer (valid: 1, 2, ...)"));
  }
  return parsed;
}

}  // namespace

std::vector<LayoutChange> scheduled_layout_changes(const Config& config) {
  const RelayoutConfig& r = config.relayout;
  const size_t n = r.steps.size();
  const auto check_length = [&](const char* key, size_t size) {
    if (size != 0 && size != n) {
      throw ConfigError(str("relayout.", key, ": ", size, " value(s) for ", n,
                            " step(s) in relayout.steps (valid: one per step, or [] to keep the "
                            "current value)"));
    }
  };
  check_length("tensor", r.tensor.size());
  check_length("pipeline", r.pipeline.size());
  check_length("chunks_per_rank", r.chunks_per_rank.size());
  check_length("schedule", r.schedule.size());
  std::vector<LayoutChange> changes;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && r.steps[i] <= r.steps[i - 1]) {
      throw ConfigError(str("relayout.steps: ", r.steps[i], " follows ", r.steps[i - 1],
                            " (valid: strictly increasing steps)"));
    }
    LayoutChange change;
    change.step = r.steps[i];
    change.tensor = entry(r.tensor, i);
    change.pipeline = entry(r.pipeline, i);
    change.chunks_per_rank = entry(r.chunks_per_rank, i);
    if (!r.schedule.empty()) {
      ScheduleKind kind = ScheduleKind::k1F1B;
      TRIAX_CHECK(parse_choice(r.schedule[i], &kind), "relayout.schedule: ", r.schedule[i]);
      change.schedule = kind;
    }
    change.trigger = str("relayout.steps[", i, "]");
    changes.push_back(change);
  }
  return changes;
}

Config apply_layout_change(const RunPlan& current, const LayoutChange& change) {
  Config next = current.config;
  if (change.tensor) next.parallel.tensor = *change.tensor;
  if (change.pipeline) next.parallel.pipeline = *change.pipeline;
  next.parallel.data = 0;  // dp takes the rest of the world
  if (change.chunks_per_rank) next.schedule.chunks_per_rank = *change.chunks_per_rank;
  if (change.frozen_layers) next.train.frozen_layers = *change.frozen_layers;
  next.schedule.name = change.schedule
                           ? *change.schedule
                           : schedule_for_chunks(next.schedule.name, next.schedule.chunks_per_rank);
  // The same samples per micro-batch; the micro-batches per rank follow dp.
  next.train.micro_batch = current.batch.micro_batch;
  next.schedule.microbatches = 0;
  next.schedule.layer_boundaries.clear();  // re-balanced over the new stages by cost
  if (change.layer_boundaries) next.schedule.layer_boundaries = *change.layer_boundaries;
  return next;
}

Config layout_at(const Config& config, int world, int64_t step) {
  Config current = config;
  for (const LayoutChange& change : scheduled_layout_changes(config)) {
    if (change.step > step) break;
    current = apply_layout_change(plan_run(current, world, DataCheck::kSkip), change);
  }
  return current;
}

void check_layout_changes(const Config& config, int world, int64_t total_steps) {
  Config current = config;
  for (const LayoutChange& change : scheduled_layout_changes(config)) {
    if (change.step >= total_steps) {
      throw ConfigError(str(
          change.trigger, ": step ", change.step, " is not before the run's last", " step ",
          total_steps, ", so the change would never happen (valid: 1 .. ", total_steps - 1, ")"));
    }
    try {
      current = apply_layout_change(plan_run(current, world, DataCheck::kSkip), change);
      plan_run(current, world, DataCheck::kSkip);
    } catch (const ConfigError& e) {
      throw ConfigError(str(change.trigger, " = ", change.step, " (", describe(change),
                            "): the layout after it is refused at ", world, " ranks: ", e.what()));
    }
  }
}

LayoutChange parse_layout_request(const std::string& text, int64_t step, const std::string& path) {
  LayoutChange change;
  change.step = step;
  change.trigger = path;
  std::istringstream in(text);
  std::string line;
  const std::vector<std::string> keys = {"parallel.tensor", "parallel.pipeline", "schedule.name",
                                         "schedule.chunks_per_rank"};
  while (std::getline(in, line)) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto last = line.find_last_not_of(" \t\r");
    line = line.substr(first, last - first + 1);
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      throw ConfigError(
          str(path, ": '", line, "' is not key=value (valid keys: ", join(keys, ", "), ")"));
    }
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    key.erase(key.find_last_not_of(" \t") + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key == "parallel.tensor") {
      change.tensor = positive_integer(key, value, path);
    } else if (key == "parallel.pipeline") {
      change.pipeline = positive_integer(key, value, path);
    } else if (key == "schedule.chunks_per_rank") {
      change.chunks_per_rank = positive_integer(key, value, path);
    } else if (key == "schedule.name") {
      ScheduleKind kind = ScheduleKind::k1F1B;
      if (!parse_choice(value, &kind)) {
        throw ConfigError(str(path, ": schedule.name: '", value, "' is not a schedule (valid: ",
                              join(choice_names<ScheduleKind>(), ", "), ")"));
      }
      change.schedule = kind;
    } else {
      const std::string hint = closest(key, keys);
      throw ConfigError(str(path, ": '", key,
                            "' cannot change while training (valid: ", join(keys, ", "),
                            hint.empty() ? "" : str("; did you mean '", hint, "'?"), ")"));
    }
  }
  if (!change.tensor && !change.pipeline && !change.chunks_per_rank && !change.schedule) {
    throw ConfigError(str(path, ": names no change (valid keys: ", join(keys, ", "), ")"));
  }
  return change;
}

std::string layout_name(const RunPlan& plan) {
  const ParallelLayout& l = plan.layout;
  return str("dp ", l.dp_size(), l.cp_size() > 1 ? str(" x cp ", l.cp_size()) : std::string(),
             " x tp ", l.tp_size(), " x pp ", l.pp_size(), ", ", plan.config.schedule.name, ", ",
             plan.config.schedule.chunks_per_rank, " chunk(s), ", plan.batch.num_microbatches,
             " micro-batch(es) of ", plan.batch.micro_batch,
             plan.config.train.frozen_layers > 0
                 ? str(", ", plan.config.train.frozen_layers, " layer(s) frozen")
                 : std::string());
}

std::string resume_hint(const RunPlan& plan) {
  const Config& c = plan.config;
  return str("--set parallel.tensor=", c.parallel.tensor,
             " --set parallel.pipeline=", c.parallel.pipeline,
             " --set schedule.name=", c.schedule.name,
             " --set schedule.chunks_per_rank=", c.schedule.chunks_per_rank,
             " --set train.micro_batch=", plan.batch.micro_batch,
             " --set train.frozen_layers=", c.train.frozen_layers,
             " --set schedule.microbatches=0 --set schedule.layer_boundaries=[",
             join(c.schedule.layer_boundaries, ","), "]");
}

}  // namespace triax
