// defines: triax::learning_rate, triax::check_lr_schedule
//
// The learning rate of each optimizer step, from the `train:` section:
//   warm-up   steps 0 .. warmup_steps-1: lr * (step + 1) / warmup_steps (never 0, so the first
//             step already moves)
//   decay     then from lr down to min_lr, reached at the last step:
//               constant  lr
//               linear    min_lr + (lr - min_lr) * (1 - t)
//               cosine    min_lr + (lr - min_lr) * (1 + cos(pi t)) / 2
//             with t = (step - warmup_steps) / (total_steps - warmup_steps - 1) in [0, 1].
// A pure function of the step, so a resumed run continues the same curve.
#pragma once

#include <cstdint>

#include "core/config.h"

namespace triax {

/// The rate for 0-based `step` of a run of `total_steps`.
double learning_rate(const TrainConfig& train, int64_t step, int64_t total_steps);

/// Throws ConfigError when min_lr exceeds lr. (A warm-up longer than the run is allowed: the
/// whole run is then warm-up, which is what `--set train.steps=20` on a long config means.)
void check_lr_schedule(const TrainConfig& train);

}  // namespace triax
