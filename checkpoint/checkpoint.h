// defines: triax::CheckpointContents, triax::save_checkpoint, triax::load_checkpoint_shard,
//          triax::begin_checkpoint, triax::write_checkpoint_shard, triax::complete_checkpoint
//
// Saving and loading a sharded checkpoint (format: checkpoint/manifest.h). The caller hands over
// named tensors (checkpoint/state_name.h) and its parameter table; this file knows nothing of
// the trainer. A save is ordered so that a kill -9 at any point loses nothing saved before:
//   1. rank 0 clears and creates the step folder; barrier
//   2. dp-rank 0 of each (pp, tp) position writes its shard atomically (the dp replicas are
//      identical) and computes its size and CRC-32
//   3. every position's ShardRecord reaches rank 0 (one all-gather of their encoded text)
//   4. rank 0 writes the manifest, then `latest`, then prunes to checkpoint.keep; barrier
// A folder without a manifest is an interrupted save and is never loaded. save_checkpoint runs
// the four in a row; checkpoint/background_save.h runs step 2 on a thread while training goes on
// (begin_checkpoint, write_checkpoint_shard and complete_checkpoint are the steps).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/manifest.h"
#include "core/config.h"
#include "parallel/parallel_context.h"

namespace triax {

/// What one (pp, tp) position contributes to a checkpoint.
struct CheckpointContents {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  ///< by StateName
  std::vector<ParameterEntry> parameters;                      ///< the position's parameter table
};

struct CheckpointLayout {
  int64_t chunks_per_rank = 1;
  int64_t global_batch = 1;  ///< for consumed_samples
};

/// Where one (pp, tp) position's shard of one save goes.
struct ShardTarget {
  std::string dir;  ///< the step folder
  int64_t step = 0;
  int pipeline_rank = 0;
  int tensor_rank = 0;
};
ShardTarget shard_target(ParallelContext& context, const std::string& dir, int64_t step);

/// Step 1 (a collective): the step folder, cleared of an interrupted save of the same step.
std::string begin_checkpoint(ParallelContext& context, const Config& config, int64_t step);
/// Step 2: writes the shard and returns its record; no communication (safe on another thread).
ShardRecord write_checkpoint_shard(const ShardTarget& target, CheckpointContents contents);
/// Steps 3-4 (a collective): `mine` is this rank's encoded ShardRecord, "" when it wrote none.
void complete_checkpoint(ParallelContext& context, const Config& config, const ShardTarget& target,
                         const CheckpointLayout& layout, const std::string& mine);

/// Saves step `step` under checkpoint_root(config) (a collective over the world); `contents`
/// is called only on the ranks that write a shard. Returns the step folder.
std::string save_checkpoint(ParallelContext& context, const Config& config, int64_t step,
                            const CheckpointLayout& layout,
                            const std::function<CheckpointContents()>& contents);

/// The tensors of the (pp, tp) position's shard, by name.
std::map<std::string, torch::Tensor> load_checkpoint_shard(const Manifest& manifest, int pp_rank,
                                                           int tp_rank);

}  // namespace triax
