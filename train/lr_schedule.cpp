#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace triax {

double learning_rate(const TrainConfig& train, int64_t step, int64_t total_steps) {
  if (step < train.warmup_steps) {
    return train.lr * static_cast<double>(step + 1) / static_cast<double>(train.warmup_steps);
  }
  if (train.lr_decay == LrDecay::kConstant) return train.lr;
  const int64_t decay_steps = total_steps - train.warmup_steps - 1;
  const double t =
      decay_steps <= 0
          ? 1.0
          : std::clamp(static_cast<double>(step - train.warmup_steps) / decay_steps, 0.0, 1.0);
  const double span = train.lr - train.min_lr;
  if (train.lr_decay == LrDecay::kLinear) return train.min_lr + span * (1.0 - t);
  return train.min_lr + span * 0.5 * (1.0 + std::cos(M_PI * t));
}

void check_lr_schedule(const TrainConfig& train) {
  if (train.min_lr > train.lr) {
    throw ConfigError(str("train.min_lr: ", train.min_lr, " is above train.lr=", train.lr,
                          " (valid: 0 to ", train.lr, ")"));
  }
}

}  // namespace triax
