// defines: triax::gather_full_state
//
// The in-memory half of an online re-layout (train/relayout.h): what a save followed by an
// offline reshard would give, without files. Every (pp, tp) position's writer (replica rank 0,
// the rank that would write its shard) hands its tensors to every rank as one message: written
// once into shared memory that every rank maps, where all share a node
// (parallel/comm/shared_messages.h), else sent (one all-gather when every rank writes, else a
// broadcast per writer). Each rank then unshards them exactly as `triax reshard` reads a checkpoint
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

/// How the writers' messages reach every rank.
enum class StateExchange {
  kShareOnOneNode,  ///< through shared memory where every rank can map it, else sent
  kSend,            ///< sent (what ranks on several nodes do; the tests compare the two)
};

/// The whole model's parameters and optimizer state after step `step`, on every rank (a
/// collective over the world). `config`: the run's configuration at the current layout;
/// `contents`: this rank's Trainer::checkpoint_contents(). The tensors may be read-only views of
/// memory other ranks share: copy them, never write to them. `used`, when given, says which way
/// the state came (the same on every rank).
FullModelState gather_full_state(ParallelContext& context, const Config& config, int64_t step,
                                 CheckpointContents contents,
                                 StateExchange exchange = StateExchange::kShareOnOneNode,
                                 StateExchange* used = nullptr);

}  // namespace triax
