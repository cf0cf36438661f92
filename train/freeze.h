// defines: triax::frozen_after, triax::auto_pipe, triax::check_freeze
//
// PipeTransformer's freeze algorithm, AutoPipe and AutoDP (He et al., ICML 2021; docs/relayout.md),
// as decisions: pure functions of what every rank knows, so the ranks agree (the loop still takes
// rank 0's verdict). Training (train/training.h) carries a decision out as an online re-layout.
//
// Freezing (freeze.criterion gradient_norm, the paper's equation 1 with its bounds): with F of L
// layers frozen, rate alpha and g_l the norm of layer l's gradient summed over the last
// freeze.every steps, the next count is
//     F' = min(F + ceil(alpha (L - F)),  l* + 1,  floor(max_fraction L)),   F' >= F,
// where l* = argmin over the active layers l in [F, L) of g_l: freeze through the layer that
// learns least, never more than alpha of the active layers at once. `progressive` drops the
// l* term (a schedule-like freeze, the paper's hand-crafted baseline).
//
// AutoPipe + AutoDP: among the pipeline sizes that divide the current one (tp, cp, chunks and
// the micro-batch size kept; dp = world / (cp tp pp') takes the freed ranks), the one with the
// least (m' v + pp' - 1) x the largest chunk cost, m' = micro-batches per pipeline at the new
// dp, v = chunks per rank: the 1F1B / GPipe makespan in chunk-steps, with frozen layers at a
// third of an active one (forward only) in the balanced split (models/stage_balance.h). Fewer
// stages win ties.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "models/model_spec.h"
#include "train/relayout.h"
#include "train/run_plan.h"

namespace triax {

/// The frozen-layer count after a decision from `frozen` of `layers`, given each layer's
/// gradient norm over the window (`norms`: one per layer; unused by `progressive`).
int64_t frozen_after(const FreezeConfig& freeze, int64_t layers, int64_t frozen,
                     const std::vector<double>& norms);

/// The change after `step` that freezes `frozen` layers: with freeze.relayout, AutoPipe's
/// pipeline size and AutoDP's dp for `world` ranks; else the same layout.
LayoutChange auto_pipe(const RunPlan& current, int64_t frozen, int64_t step);

/// `config` continued from a checkpoint whose configuration `saved` froze more layers: its
/// frozen layers and the layout they were trained on (tensor, pipeline, chunks, schedule, the
/// micro-batch size and the stage split).
Config freeze_state_of(const Config& config, const Config& saved);

/// Training FLOPs per unit (token) with train.frozen_layers frozen: the family's count less
/// two thirds of each frozen layer (its backward), for MFU.
double training_flops_per_unit(const ModelSpec& spec, const Config& config);

/// The freeze's rules for this configuration (ConfigError naming the key): a transformer, whole
/// gradients (no ddp.shard with criterion gradient_norm; no ZeRO-3), no split backward schedule,
/// train.frozen_layers below model.layers.
void check_freeze(const Config& config);

}  // namespace triax
