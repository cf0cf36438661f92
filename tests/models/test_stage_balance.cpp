// The default pipeline split (models/stage_balance.h): balanced by estimated cost, with the head
// and loss counted on the last stage, never worse than the layer-count split, and that split
// kept whenever it is as good (small heads: the test models, the bundled GPT).
#include <catch2/catch.hpp>

#include "models/gpt_spec.h"
#include "models/stage_balance.h"
#include "support/tiny_gpt.h"

using namespace triax;

namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

double worst(const Ranges& ranges, const StageCosts& costs) {
  const auto all = estimated_stage_costs(ranges, costs);
  return *std::max_element(all.begin(), all.end());
}

}  // namespace

TEST_CASE("the default split balances estimated cost, the head counted", "[stage_balance]") {
  // GPT-2 small: the head (6 x 768 x 50257 FLOPs per token) is ~4.5 layers.
  Config c;
  c.model.arch = ModelKind::kGpt;
  c.model.vocab = 50257;
  c.model.hidden = 768;
  c.model.heads = 12;
  c.model.layers = 12;
  c.model.seq_len = 1024;
  const StageCosts costs = stage_costs(c.model, gpt_spec().flops_per_unit);
  CHECK(costs.last / costs.layer == Approx(4.46).epsilon(0.01));
  c.parallel.pipeline = 4;
  const Ranges split = model_spec(ModelKind::kGpt).stage_layers(c);
  CHECK(split == Ranges{{0, 3}, {3, 7}, {7, 11}, {11, 12}});
  const Ranges even = split_layers(12, 4);
  CHECK(worst(split, costs) < worst(even, costs) * 0.75);  // 5.5 layers against 7.5
  // Hand-placed boundaries win.
  c.schedule.layer_boundaries = {3, 6, 9};
  CHECK(model_spec(ModelKind::kGpt).stage_layers(c) == even);
  // Exhaustively: no contiguous split of 12 layers into 4 has a smaller worst stage.
  double best = 1e300;
  for (int a = 1; a < 12; ++a)
    for (int b = a + 1; b < 12; ++b)
      for (int d = b + 1; d < 12; ++d)
        best = std::min(best, worst(Ranges{{0, a}, {a, b}, {b, d}, {d, 12}}, costs));
  CHECK(worst(split, costs) == Approx(best));
}

TEST_CASE("models with a small head keep the layer-count split", "[stage_balance]") {
  for (int pp : {2, 4}) {
    Config c = testing::tiny_gpt_config(1, pp, "1f1b", 1);
    CHECK(model_spec(ModelKind::kGpt).stage_layers(c) == split_layers(c.model.layers, pp));
  }
  Config odd = testing::tiny_gpt_config(1, 2, "1f1b", 1);
  odd.model.layers = 5;  // 3 + 2 by count; the last stage also has the head: 3 + 2 stays best
  CHECK(model_spec(ModelKind::kGpt).stage_layers(odd) == Ranges{{0, 3}, {3, 5}});
}
