#include "checkpoint/save_policy.h"

#include "checkpoint/location.h"
#include "core/log.h"

namespace triax {

SavePolicy::SavePolicy(const Config& config)
    : every_(config.checkpoint.every),
      at_end_(config.checkpoint.at_end),
      root_(checkpoint_root(config)) {}

bool SavePolicy::due(int64_t steps_done, bool last, bool signalled) const {
  const bool periodic = every_ > 0 && steps_done % every_ == 0;
  if (!periodic && !signalled && !(last && at_end_)) return false;
  if (!root_.empty()) return true;
  if (periodic || signalled) log::warn("no checkpoint saved: set checkpoint.dir or run.dir");
  return false;
}

}  // namespace triax
