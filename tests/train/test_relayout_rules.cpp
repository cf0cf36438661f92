// The decisions behind an online re-layout, freezing, AutoPipe and AutoDP (train/relayout.h,
// train/freeze.h), which every rank takes alone: the relayout lists and request files, the
// layout a change leads to, the freeze rule worked by hand from the paper's equation, AutoPipe's
// choice against the makespan computed here, the frozen-aware stage split, and each refusal.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.h"
#include "models/model_spec.h"
#include "models/stage_balance.h"
#include "support/tiny_gpt.h"
#include "train/freeze.h"
#include "train/relayout.h"
#include "train/run_plan.h"

using Catch::Contains;
using namespace triax;

namespace {

Config gpt(int tp, int pp) {
  Config c = testing::tiny_gpt_config(tp, pp, "1f1b", 1);
  c.model.layers = 8;
  c.train.global_batch = 16;
  return c;
}

}  // namespace

TEST_CASE("relayout lists become changes; a change keeps the micro-batch and re-balances",
          "[relayout]") {
  Config c = gpt(1, 4);
  c.relayout.steps = {3, 7};
  c.relayout.pipeline = {2, 1};
  c.relayout.schedule = {"gpipe", "1f1b"};
  c.schedule.layer_boundaries = {1, 5, 6};
  const auto changes = scheduled_layout_changes(c);
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].step == 3);
  CHECK(*changes[0].pipeline == 2);
  CHECK_FALSE(changes[0].tensor.has_value());
  CHECK(*changes[1].schedule == ScheduleKind::k1F1B);
  CHECK(changes[1].trigger == "relayout.steps[1]");

  const RunPlan before = plan_run(c, 4, DataCheck::kSkip);  // dp 1: 8 micro-batches of 2
  const Config after = apply_layout_change(before, changes[0]);
  CHECK(after.parallel.pipeline == 2);
  CHECK(after.schedule.name == ScheduleKind::kGpipe);
  CHECK(after.train.micro_batch == 2);
  CHECK(after.schedule.layer_boundaries.empty());
  const RunPlan plan = plan_run(after, 4, DataCheck::kSkip);
  CHECK(plan.layout.dp_size() == 2);
  CHECK(plan.batch.num_microbatches == 4);
  CHECK(layout_name(plan) == "dp 2 x tp 1 x pp 2, gpipe, 1 chunk(s), 4 micro-batch(es) of 2");

  CHECK(layout_at(c, 4, 2).parallel.pipeline == 4);
  CHECK(layout_at(c, 4, 3).parallel.pipeline == 2);
  CHECK(layout_at(c, 4, 100).parallel.pipeline == 1);
}

TEST_CASE("relayout refusals name the list, the step and the rule", "[relayout]") {
  Config c = gpt(1, 4);
  c.relayout.steps = {3, 7};
  c.relayout.pipeline = {2};
  CHECK_THROWS_WITH(scheduled_layout_changes(c),
                    Contains("relayout.pipeline: 1 value(s) for 2 step(s)"));
  c.relayout.pipeline = {2, 1};
  c.relayout.steps = {7, 3};
  CHECK_THROWS_WITH(scheduled_layout_changes(c), Contains("relayout.steps: 3 follows 7"));
  c.relayout.steps = {3, 7};
  CHECK_THROWS_WITH(check_layout_changes(c, 4, 7), Contains("relayout.steps[1]: step 7 is not"));
  c.relayout.pipeline = {3, 1};
  CHECK_THROWS_WITH(check_layout_changes(c, 4, 20),
                    Contains("relayout.steps[0] = 3 (pipeline 3): the layout after it is refused "
                             "at 4 ranks: parallel: world size 4 is not divisible"));
  c.relayout.pipeline = {2, 1};
  CHECK_NOTHROW(check_layout_changes(c, 4, 20));
}

TEST_CASE("a request file is --set lines of four keys", "[relayout]") {
  const LayoutChange change = parse_layout_request(
      "# wider dp\nparallel.pipeline = 2\n\nschedule.name=gpipe  # faster here\n", 5, "F");
  CHECK(change.step == 5);
  CHECK(*change.pipeline == 2);
  CHECK(*change.schedule == ScheduleKind::kGpipe);
  CHECK(change.trigger == "F");
  CHECK_THROWS_WITH(parse_layout_request("parallel.pipline=2", 5, "F"),
                    Contains("F: 'parallel.pipline' cannot change while training") &&
                        Contains("did you mean 'parallel.pipeline'?"));
  CHECK_THROWS_WITH(parse_layout_request("parallel.tensor=two", 5, "F"),
                    Contains("F: parallel.tensor: 'two' is not a positive integer"));
  CHECK_THROWS_WITH(parse_layout_request("schedule.name=zb", 5, "F"),
                    Contains("'zb' is not a schedule (valid: gpipe, 1f1b"));
  CHECK_THROWS_WITH(parse_layout_request("# nothing\n", 5, "F"), Contains("F: names no change"));
}

TEST_CASE("the freeze rule: min(F + ceil(alpha (L - F)), argmin + 1, cap), never less",
          "[freeze]") {
  FreezeConfig f;
  f.rate = 0.5;
  f.max_fraction = 0.75;
  // L = 8: at most 6 frozen. From 0: alpha allows 4; the least norm is layer 2 -> 3.
  CHECK(frozen_after(f, 8, 0, {5, 4, 1, 3, 2, 6, 7, 8}) == 3);
  // The least norm past alpha's bound (layer 6 of the active 2..7): alpha's 2 + 3 = 5 wins.
  CHECK(frozen_after(f, 8, 2, {0, 0, 9, 8, 7, 6, 1, 5}) == 5);
  // Only active layers count: frozen ones have no gradient (0) and are skipped.
  CHECK(frozen_after(f, 8, 3, {0, 0, 0, 2, 9, 9, 9, 9}) == 4);
  // The cap: floor(0.75 * 8) = 6.
  CHECK(frozen_after(f, 8, 5, {0, 0, 0, 0, 0, 9, 9, 1}) == 6);
  CHECK(frozen_after(f, 8, 6, {0, 0, 0, 0, 0, 0, 9, 1}) == 6);
  f.criterion = FreezeCriterion::kProgressive;
  CHECK(frozen_after(f, 8, 0, {}) == 4);
  CHECK(frozen_after(f, 8, 4, {}) == 6);
  f.rate = 0.1;  // at least one layer a decision
  CHECK(frozen_after(f, 8, 0, {}) == 1);
  f.rate = 1.0;  // max_fraction 1 still leaves one layer to train
  f.max_fraction = 1.0;
  CHECK(frozen_after(f, 8, 0, {}) == 7);
}

TEST_CASE("frozen layers cost a third in AutoPipe's split", "[freeze]") {
  StageCosts costs;
  costs.layer = 3;
  costs.frozen = 2;
  CHECK(costs.layers(0, 4) == Approx(1 + 1 + 3 + 3));
  CHECK(costs.layers(1, 3) == Approx(1 + 3));
  CHECK(costs.layers(2, 4) == Approx(6));
  // Six of eight layers frozen weigh as two: the first of two stages takes more than half.
  costs.frozen = 6;
  const auto split = balance_layers(8, 2, costs, {{0, 4}, {4, 8}});
  CHECK(split[0].second > 4);
  // The plan's own split does not depend on train.frozen_layers (a checkpoint's stages stay
  // where they were); AutoPipe writes its split into schedule.layer_boundaries.
  Config c = gpt(1, 2);
  const auto even = plan_run(c, 2, DataCheck::kSkip).stage_layers;
  c.train.frozen_layers = 6;
  CHECK(plan_run(c, 2, DataCheck::kSkip).stage_layers == even);
}

TEST_CASE("AutoPipe takes the least makespan, fewer stages on a tie; AutoDP the freed ranks",
          "[freeze]") {
  Config c = gpt(1, 4);
  c.freeze.every = 4;
  const RunPlan plan = plan_run(c, 4, DataCheck::kSkip);
  const ModelSpec& spec = model_spec(c.model.arch);
  // The makespan of pp stages balanced with `frozen` layers at a third, worked here.
  const auto span = [&](int64_t pp, int64_t frozen) {
    StageCosts costs = stage_costs(c.model, spec.flops_per_unit);
    costs.frozen = frozen;
    std::vector<std::pair<int64_t, int64_t>> even;
    for (int64_t s = 0; s < pp; ++s) even.emplace_back(8 * s / pp, 8 * (s + 1) / pp);
    const auto stages =
        estimated_stage_costs(balance_layers(8, static_cast<int>(pp), costs, even), costs);
    const double slowest = *std::max_element(stages.begin(), stages.end());
    const double microbatches = 16.0 / (2.0 * static_cast<double>(4 / pp));  // micro-batches of 2
    return (microbatches + static_cast<double>(pp) - 1) * slowest;
  };
  for (int64_t frozen : {2, 6}) {
    const LayoutChange change = auto_pipe(plan, frozen, 4);
    int64_t best = 1;
    for (int64_t pp : {2, 4}) {
      if (span(pp, frozen) < span(best, frozen) * (1 - 1e-9)) best = pp;
    }
    CHECK(*change.pipeline == best);
    CHECK(*change.frozen_layers == frozen);
    const RunPlan after = plan_run(apply_layout_change(plan, change), 4, DataCheck::kSkip);
    CHECK(after.layout.dp_size() == 4 / best);
    CHECK(after.config.train.frozen_layers == frozen);
    if (best > 1) CHECK(after.config.schedule.layer_boundaries.size() == size_t(best - 1));
  }
  Config in_place = c;
  in_place.freeze.relayout = false;
  const RunPlan before = plan_run(in_place, 4, DataCheck::kSkip);
  const LayoutChange same = auto_pipe(before, 2, 4);
  CHECK_FALSE(same.pipeline.has_value());
  CHECK(plan_run(apply_layout_change(before, same), 4, DataCheck::kSkip).stage_layers ==
        before.stage_layers);
}

TEST_CASE("freezing is refused where it cannot run, naming the key", "[freeze]") {
  Config c = gpt(1, 2);
  c.freeze.every = 4;
  c.schedule.name = ScheduleKind::kZbh1;
  CHECK_THROWS_WITH(plan_run(c, 2, DataCheck::kSkip),
                    Contains("freeze.every: 4 is not supported with schedule.name: zbh1"));
  c.schedule.name = ScheduleKind::k1F1B;
  c.ddp.shard = ShardLevel::kOptimizer;
  CHECK_THROWS_WITH(plan_run(c, 2, DataCheck::kSkip),
                    Contains("freeze.criterion: gradient_norm reads each layer's whole"));
  c.freeze.criterion = FreezeCriterion::kProgressive;
  CHECK_NOTHROW(plan_run(c, 2, DataCheck::kSkip));
  c.ddp.shard = ShardLevel::kParameters;
  CHECK_THROWS_WITH(plan_run(c, 2, DataCheck::kSkip), Contains("ddp.shard: parameters"));
  Config d = gpt(1, 2);
  d.train.frozen_layers = 8;
  CHECK_THROWS_WITH(plan_run(d, 2, DataCheck::kSkip),
                    Contains("train.frozen_layers: 8 leaves no layer of 8 to train"));
}
