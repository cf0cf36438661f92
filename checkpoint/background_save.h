// defines: triax::BackgroundSave
//
// Checkpoints that cost (almost) nothing: with `checkpoint.async: true` a save takes a snapshot of
// this rank's state on the training thread (a copy in memory, the only pause) and a writer thread
// writes the shard (checkpoint/checkpoint.h, step 2) while training goes on. The manifest and
// `latest` are written only once every writer has finished (steps 3-4, a collective run at a step
// boundary), so the guarantees of a synchronous save hold: kill -9 or a full disk in the middle
// leaves the previous checkpoint the one `latest` names.
//   - At most one save is in flight. When the next is due before it finished, the step waits
//     for it (and says so): snapshots never pile up in memory.
//   - poll() at every step boundary finishes a save whose writers are all done (one small
//     all-reduce while a save is in flight; nothing otherwise).
//   - A writer's error (a full disk) is raised on its rank at the next poll, as a synchronous
//     save would have raised it (a writer that fails mid-stream still runs the stream to its end,
//     so the other ranks' gathers complete).
//   - finish() waits: before a save on a stop signal or at the end, and before the run returns.
//   - Where the dp ranks hold slices (a sharded optimizer), each takes a copy of its own slices
//     and its thread streams them to the writer a bucket at a time over the save's own
//     communicator (the contents are built so): the snapshot is 1/dp of the state, and no rank
//     holds the whole.
// Without async every save is synchronous, as before.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <string>

#include "checkpoint/checkpoint.h"
#include "core/timing.h"

namespace triax {

class BackgroundSave {
 public:
  BackgroundSave(ParallelContext& context, const Config& config);
  ~BackgroundSave();
  BackgroundSave(const BackgroundSave&) = delete;
  BackgroundSave& operator=(const BackgroundSave&) = delete;

  /// Saves `step` (a collective). `wait`: synchronously even when async (a stop signal, the
  /// last step). Returns the step folder. `contents` is called on every rank; built for a
  /// background save where background(wait) is true.
  std::string save(int64_t step, const CheckpointLayout& layout,
                   const std::function<CheckpointContents()>& contents, bool wait);
  /// Whether save(..., wait) writes on a thread: the contents' stream must then use copies and
  /// a communicator of its own.
  bool background(bool wait) const { return async_ && !wait; }
  /// At a step boundary (a collective while a save is in flight): completes it when every
  /// writer is done.
  void poll();
  /// Waits for the save in flight and completes it (a collective while one is in flight).
  void finish();
  bool in_flight() const { return pending_.has_value(); }

 private:
  struct Pending {
    ShardTarget target;
    CheckpointLayout layout;
    std::future<std::string> record;  ///< the encoded ShardRecord ("" on non-writers)
    double snapshot_s = 0;
    SteadyClock::time_point started_at;
  };
  void complete();

  ParallelContext& context_;
  const Config& config_;
  bool async_;
  std::optional<Pending> pending_;
};

}  // namespace triax
