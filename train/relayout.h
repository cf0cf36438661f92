// defines: triax::LayoutChange, triax::scheduled_layout_changes, triax::apply_layout_change,
//          triax::layout_at, triax::check_layout_changes, triax::parse_layout_request,
//          triax::layout_name, triax::resume_hint
//
// Online re-layout (docs/relayout.md): what a change of layout is and when one is due, decided
// without communication so every rank reaches the same verdict. A change names the new tensor and
// pipeline sizes, chunks per rank and schedule (each optional: kept); dp takes the rest of the
// world (cp is kept). The global batch and the micro-batch size are kept, so the same samples make
// each step and each micro-batch holds as many as before: only the number of micro-batches per
// rank follows dp. Stage boundaries are re-balanced by cost, as `triax reshard` does. Training
// (train/training.h) carries a change out: the whole state gathered in memory
// (checkpoint/redistribute.h), new groups, a new Trainer holding the new shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "train/run_plan.h"

namespace triax {

struct LayoutChange {
  int64_t step = 0;  ///< the change happens after this step
  std::optional<int64_t> tensor, pipeline, chunks_per_rank;
  std::optional<ScheduleKind> schedule;
  std::optional<int64_t> frozen_layers;  ///< train.frozen_layers (the freeze algorithm's)
  /// schedule.layer_boundaries (AutoPipe's frozen-aware split); none = balanced by cost.
  std::optional<std::vector<int64_t>> layer_boundaries;
  std::string trigger;  ///< "relayout.steps[1]", or the request file
};

/// The relayout.* lists as changes, in order; ConfigError when a list's length is neither 0 nor
/// that of relayout.steps, or the steps do not increase.
std::vector<LayoutChange> scheduled_layout_changes(const Config& config);

/// The configuration after `change` from the layout of `current` (its plan: the micro-batch size
/// kept as train.micro_batch).
Config apply_layout_change(const RunPlan& current, const LayoutChange& change);

/// The configuration in effect after `step` steps: every scheduled change up to it applied (a
/// resumed run starts on it). `world`: the launch's ranks.
Config layout_at(const Config& config, int world, int64_t step);

/// Plans every scheduled change in turn for `world` ranks (no data opened): ConfigError naming
/// the change (relayout.steps[i]) and the rule its layout breaks, or a step at or past the run's
/// `total_steps` (it would never happen).
void check_layout_changes(const Config& config, int world, int64_t total_steps);

/// A request file's text (`key=value` lines as --set takes them; keys parallel.tensor,
/// parallel.pipeline, schedule.name, schedule.chunks_per_rank; `#` comments) as a change after
/// `step`; ConfigError naming the file, the key and what is valid.
LayoutChange parse_layout_request(const std::string& text, int64_t step, const std::string& path);

/// "dp 2 x tp 1 x pp 2, 1f1b, 1 chunk(s), 4 micro-batch(es) of 2".
std::string layout_name(const RunPlan& plan);

/// The --set flags a resume from a checkpoint written on `plan`'s layout needs when the YAML
/// does not lead to it (a change made on request).
std::string resume_hint(const RunPlan& plan);

}  // namespace triax
