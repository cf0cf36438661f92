// defines: triax::CheckpointContents, triax::save_checkpoint, triax::load_checkpoint_shard,
//          triax::begin_checkpoint, triax::write_checkpoint_shard, triax::stream_checkpoint_shard,
//          triax::complete_checkpoint, triax::TensorSink, triax::materialize
//
// Saving and loading a sharded checkpoint (format: checkpoint/manifest.h). The caller hands over
// named tensors (checkpoint/state_name.h) and its parameter table; this file knows nothing of
// the trainer. A save is ordered so that a kill -9 at any point loses nothing saved before:
//   1. rank 0 clears and creates the step folder; barrier
//   2. dp-rank 0 of each (pp, tp) position writes its shard atomically (the dp replicas are
//      identical) and computes its size and CRC-32. Where the dp ranks hold slices (a sharded
//      optimizer), the slices reach the writer one bucket at a time (the contents' stream, run
//      by every dp rank), so no rank holds the whole position's state, nor a ZeRO-3 model whole
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

/// Takes one checkpoint tensor by name (the shard's writer; a test's map).
using TensorSink = std::function<void(const std::string& name, const torch::Tensor& value)>;

/// What one (pp, tp) position contributes to a checkpoint.
struct CheckpointContents {
  /// By StateName, in file order. A tensor on the meta device (a dtype and a shape) comes later,
  /// from `stream`.
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  std::vector<ParameterEntry> parameters;  ///< the position's parameter table
  /// Hands every meta tensor's value to a sink, a few at a time (a sharded optimizer gathers one
  /// bucket of its slices at a time): a collective over the dp ranks that split the state, run by
  /// each of them. Empty when no tensor is meta.
  std::function<void(const TensorSink&)> stream;
};

/// The tensors with every meta one filled in from the stream (a collective, as the stream is):
/// the whole contents, for a test's comparison; saves stream instead.
std::vector<std::pair<std::string, torch::Tensor>> materialize(CheckpointContents contents);

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
/// Step 2: writes the shard and returns its record; no communication beyond the contents' stream
/// (safe on another thread when the stream's communicator is its own).
ShardRecord write_checkpoint_shard(const ShardTarget& target, CheckpointContents contents);
/// Step 2 on a dp rank that writes no shard: its part in the contents' stream, if any.
void stream_checkpoint_shard(CheckpointContents contents);
/// Steps 3-4 (a collective): `mine` is this rank's encoded ShardRecord, "" when it wrote none.
void complete_checkpoint(ParallelContext& context, const Config& config, const ShardTarget& target,
                         const CheckpointLayout& layout, const std::string& mine);

/// Saves step `step` under checkpoint_root(config) (a collective over the world); `contents`
/// is called on every rank (the writers write, the others stream). Returns the step folder.
std::string save_checkpoint(ParallelContext& context, const Config& config, int64_t step,
                            const CheckpointLayout& layout,
                            const std::function<CheckpointContents()>& contents);

/// The tensors of the (pp, tp) position's shard, by name.
std::map<std::string, torch::Tensor> load_checkpoint_shard(const Manifest& manifest, int pp_rank,
                                                           int tp_rank);

}  // namespace triax
