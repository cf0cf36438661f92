#include "train/freeze.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "models/stage_balance.h"
#include "models/transformer_stages.h"

namespace triax {

int64_t frozen_after(const FreezeConfig& freeze, int64_t layers, int64_t frozen,
                     const std::vector<double>& norms) {
  // At least one layer keeps training, whatever max_fraction says.
  const int64_t cap = std::min<int64_t>(
      layers - 1,
      static_cast<int64_t>(std::floor(freeze.max_fraction * static_cast<double>(layers) + 1e-9)));
  if (frozen >= cap) return frozen;
  const auto step =
      static_cast<int64_t>(std::ceil(freeze.rate * static_cast<double>(layers - frozen) - 1e-9));
  int64_t next = frozen + std::max<int64_t>(step, 1);
  if (freeze.criterion == FreezeCriterion::kGradientNorm) {
    TRIAX_CHECK(static_cast<int64_t>(norms.size()) == layers, "freeze: ", norms.size(),
                " gradient norms for ", layers, " layers");
    int64_t least = frozen;
    for (int64_t l = frozen; l < layers; ++l) {
      if (norms[static_cast<size_t>(l)] < norms[static_cast<size_t>(least)]) least = l;
    }
    next = std::min(next, least + 1);
  }
  return std::max(frozen, std::min(next, cap));
}

namespace {

// The first layer of stages 1 .. n-1 of `ranges`: a split as schedule.layer_boundaries.
std::vector<int64_t> boundaries_of(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<int64_t> out;
  for (size_t s = 1; s < ranges.size(); ++s) out.push_back(ranges[s].first);
  return out;
}

}  // namespace

LayoutChange auto_pipe(const RunPlan& current, int64_t frozen, int64_t step) {
  LayoutChange change;
  change.step = step;
  change.frozen_layers = frozen;
  change.trigger = str("freeze (", frozen, " layer(s) frozen)");
  const Config& c = current.config;
  if (!c.freeze.relayout) {  // freeze in place: the same layout and split
    change.layer_boundaries = boundaries_of(current.stage_layers);
    return change;
  }
  const int world = current.layout.world_size();
  const ModelSpec& spec = model_spec(c.model.arch);
  StageCosts costs = stage_costs(c.model, spec.flops_per_unit);
  costs.frozen = frozen;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t pp = 1; pp <= c.parallel.pipeline; ++pp) {
    if (c.parallel.pipeline % pp != 0) continue;
    LayoutChange trial = change;
    trial.pipeline = pp;
    RunPlan plan;
    try {
      plan = plan_run(apply_layout_change(current, trial), world, DataCheck::kSkip);
      // The split balanced with frozen layers at a third of an active one, written down so
      // checkpoints and resumes keep it.
      const int stages = static_cast<int>(pp * plan.config.schedule.chunks_per_rank);
      if (stages > 1) {
        const int64_t layers = c.model.layers;
        trial.layer_boundaries =
            boundaries_of(balance_layers(layers, stages, costs, split_layers(layers, stages, {})));
        plan = plan_run(apply_layout_change(current, trial), world, DataCheck::kSkip);
      }
    } catch (const ConfigError&) {
      continue;  // the model or the batch cannot take it
    }
    const std::vector<double> chunk_costs = estimated_stage_costs(plan.stage_layers, costs);
    const double slowest = *std::max_element(chunk_costs.begin(), chunk_costs.end());
    const double chunks = static_cast<double>(plan.config.schedule.chunks_per_rank);
    const double span =
        (static_cast<double>(plan.batch.num_microbatches) * chunks + static_cast<double>(pp) - 1) *
        slowest;
    if (span < best * (1 - 1e-9)) {  // ascending pp: fewer stages win ties
      best = span;
      change.pipeline = pp;
      change.layer_boundaries = trial.layer_boundaries;
    }
  }
  return change;
}

Config freeze_state_of(const Config& config, const Config& saved) {
  Config out = config;
  out.train.frozen_layers = saved.train.frozen_layers;
  out.parallel.tensor = saved.parallel.tensor;
  out.parallel.pipeline = saved.parallel.pipeline;
  out.parallel.data = 0;
  out.schedule.chunks_per_rank = saved.schedule.chunks_per_rank;
  out.schedule.name = saved.schedule.name;
  out.schedule.microbatches = saved.schedule.microbatches;
  out.schedule.layer_boundaries = saved.schedule.layer_boundaries;
  out.train.micro_batch = saved.train.micro_batch;
  return out;
}

double training_flops_per_unit(const ModelSpec& spec, const Config& config) {
  const double all = spec.flops_per_unit(config.model);
  if (config.train.frozen_layers == 0) return all;
  const StageCosts costs = stage_costs(config.model, spec.flops_per_unit);
  // A frozen layer runs its forward (2 of 6); a head tied to the frozen embedding computes no
  // weight gradient (1 of its 3 matmuls).
  return all - static_cast<double>(config.train.frozen_layers) * costs.layer * 2.0 / 3.0 -
         (config.model.tie_embeddings ? costs.last / 3.0 : 0.0);
}

void check_freeze(const Config& c) {
  const bool freezing = c.freeze.every > 0 || c.train.frozen_layers > 0;
  if (!freezing) return;
  const std::string key = c.freeze.every > 0 ? "freeze.every" : "train.frozen_layers";
  const std::string value = c.freeze.every > 0 ? str(c.freeze.every) : str(c.train.frozen_layers);
  if (!model_spec(c.model.arch).pipelined) {
    throw ConfigError(str(key, ": ", value, " freezes transformer layers, but model.arch is ",
                          c.model.arch, " (valid: gpt, llama; or 0)"));
  }
  if (c.train.frozen_layers >= c.model.layers) {
    throw ConfigError(str("train.frozen_layers: ", c.train.frozen_layers, " leaves no layer of ",
                          c.model.layers, " to train (valid: 0 .. ", c.model.layers - 1, ")"));
  }
  if (c.schedule.name == ScheduleKind::kZbh1 || c.schedule.name == ScheduleKind::kZbv) {
    throw ConfigError(str(key, ": ", value,
                          " is not supported with schedule.name: ", c.schedule.name,
                          " (split backward passes; valid: gpipe, 1f1b, interleaved)"));
  }
  const ShardLevel level = shard_level(c);
  if (level == ShardLevel::kParameters) {
    throw ConfigError(str(key, ": ", value,
                          " is not supported with ddp.shard: parameters (ZeRO-3 gathers frozen and "
                          "active parameters alike; valid: ddp.shard none, optimizer, gradients)"));
  }
  if (c.freeze.cache && c.model.dropout > 0) {
    throw ConfigError(
        str("freeze.cache: true keeps the frozen layers' output per sample, which "
            "model.dropout: ",
            c.model.dropout,
            " draws anew at every step (valid: model.dropout: 0, or freeze.cache: "
            "false)"));
  }
  if (c.freeze.every > 0 && c.freeze.criterion == FreezeCriterion::kGradientNorm &&
      level != ShardLevel::kNone) {
    throw ConfigError(
        str("freeze.criterion: gradient_norm reads each layer's whole averaged "
            "gradient, which ddp.shard: ",
            level,
            " splits over dp (valid: freeze.criterion: progressive, or "
            "ddp.shard: none)"));
  }
}

}  // namespace triax
