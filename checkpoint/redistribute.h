// defines: triax::gather_full_state
//
// The in-memory half of an online re-layout (train/relayout.h): what a save followed by an
// offline reshard would give, without files. Every (pp, tp) position's writer (replica rank 0,
// the rank that would write its shard) sends its tensors to every rank as one message (one
// all-gather when every rank writes, else a broadcast per writer); each rank then unshards them
// exactly as `triax reshard` reads a checkpoint
// (full_state_of), so the state a run continues from after a re-layout is the one it would resume
// from a checkpoint resharded to the new layout, bit for bit. Dropout streams are dropped, as a
// reshard drops them (they belong to a position). Each rank holds the whole model's state for the
// moment of the change: fine for the models a layout change is tried on here; a large model would
// send each rank only its new shard.
#pragma once

#include "checkpoint/checkpoint.h"
#include "checkpoint/convert.h"
#include "core/config.h"
#include "parallel/parallel_context.h"

namespace triax {

/// The whole model's parameters and optimizer state after step `step`, on every rank (a
/// collective over the world). `config`: the run's configuration at the current layout;
/// `contents`: this rank's Trainer::checkpoint_contents().
FullModelState gather_full_state(ParallelContext& context, const Config& config, int64_t step,
                                 CheckpointContents contents);

}  // namespace triax
