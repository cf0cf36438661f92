// defines: triax::BatchPlan
//
// The global batch is the training semantics; dp only decides how it is cut.
//   global_batch = micro_batch * num_microbatches * dp
// local_batch = global_batch / dp samples per rank per step, taken in num_microbatches
// micro-batches of micro_batch samples. Checked before any communication exists, with the keys
// and valid values in the message.
#pragma once

#include <cstdint>
#include <string>

#include "core/config.h"

namespace triax {

struct BatchPlan {
  int64_t global_batch = 1;      ///< samples per optimizer step, all dp ranks together
  int dp = 1;                    ///< data-parallel ranks
  int64_t local_batch = 1;       ///< samples per rank per step
  int64_t micro_batch = 1;       ///< samples per forward/backward
  int64_t num_microbatches = 1;  ///< micro-batches per rank per step

  /// Throws ConfigError when train.global_batch / dp or train.micro_batch do not divide.
  static BatchPlan create(const TrainConfig& train, int dp);

  /// "global batch 64 = dp 4 x 2 micro-batches x 8 samples".
  std::string describe() const;
};

}  // namespace triax
