// defines: triax::StageCosts, triax::stage_costs, triax::balance_layers
//
// The default pipeline split balances estimated work per stage, not layer counts: the last
// stage also runs the head (a [hidden x vocab] matmul — for GPT-2 small 5.5 layers' worth) and
// the loss, the first the embedding. Costs are training FLOPs per token from the family's own
// count (ModelSpec::flops_per_unit), taken apart: one layer = flops(L) - flops(L-1), the head =
// flops(vocab V) - flops(vocab 1); the embedding's lookup and its gradient's scatter-add count
// 6 x hidden (they move rows, they multiply nothing). Of the splits with the least maximum
// stage cost, the layer-count split is kept when it is one of them (so models whose head is
// small split as before).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/config.h"

namespace triax {

struct StageCosts {
  double layer = 1;  ///< one transformer layer, FLOPs per token
  double first = 0;  ///< what the first stage adds (embedding)
  double last = 0;   ///< what the last stage adds (final norm, head, loss)
  /// The first `frozen` layers (train.frozen_layers) run forward only: 1/3 of a layer's
  /// training FLOPs (forward 2N of 6N per token).
  int64_t frozen = 0;

  /// Layers [first, last)'s cost.
  double layers(int64_t first, int64_t last) const;
};

/// A family's costs from its FLOP count (`flops`: ModelSpec::flops_per_unit); no layer frozen.
StageCosts stage_costs(const ModelConfig& model, double (*flops)(const ModelConfig&));

/// [first, last) layers of `parts` contiguous stages of at least one layer each, minimising the
/// largest stage cost; `even` (the layer-count split) wins ties.
std::vector<std::pair<int64_t, int64_t>> balance_layers(
    int64_t layers, int parts, const StageCosts& costs,
    const std::vector<std::pair<int64_t, int64_t>>& even);

/// Each stage's estimated cost, FLOPs per token.
std::vector<double> estimated_stage_costs(const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                          const StageCosts& costs);

}  // namespace triax
