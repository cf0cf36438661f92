// defines: triax::SavePolicy
//
// When the training loop saves: every `checkpoint.every` steps, after the last step
// (`checkpoint.at_end`), and when the ranks agreed on a stop signal. Without a checkpoint folder
// (checkpoint.dir or run.dir) nothing is saved; a save that was asked for explicitly (periodic or
// by signal) then warns, while at_end, on by default, stays quiet.
#pragma once

#include <cstdint>
#include <string>

#include "core/config.h"

namespace triax {

class SavePolicy {
 public:
  explicit SavePolicy(const Config& config);

  /// Whether to save after `steps_done` optimizer steps; `last`: the run's final step;
  /// `signalled`: the ranks agreed on a stop signal. The same answer on every rank.
  bool due(int64_t steps_done, bool last, bool signalled) const;
  const std::string& root() const { return root_; }

 private:
  int64_t every_;
  bool at_end_;
  std::string root_;
};

}  // namespace triax
