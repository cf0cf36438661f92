// defines: triax::Heartbeat, triax::HeartbeatMessage, triax::parse_heartbeat_line
//
// Liveness apart from progress. A timeout on every wait (comm.timeout_s) cannot tell a dead rank
// from a slow one, so it must be long (a save, an evaluation); a heartbeat can: a thread of its
// own beats once a second whatever the rank is doing (computing, saving, waiting), and only a
// process that is stopped (SIGSTOP, a debugger, a frozen machine) or gone (killed, its node lost
// or cut off) falls silent. As in torchelastic's agent and NCCL's heartbeat monitor:
//   - rank 0's thread is the watcher: every other rank keeps one TCP connection to it (to
//     127.0.0.1 on rank 0's host, else to one of rank 0's addresses), sends a beat with its step
//     and last action (core/flight_recorder.h) every second, and hears a beat back;
//   - a rank whose connection closes without a goodbye is lost at once (its process ended); one
//     silent for comm.heartbeat_s is lost then (stopped, or its node unreachable). The watcher
//     names it (rank, pid, host, step, last action), tells every other rank, and each survivor
//     prints it and ends; a survivor on the lost rank's host SIGKILLs a silent one (a stopped
//     process ignores the launcher's SIGTERM and would hold the job);
//   - a rank that hears nothing from the watcher for comm.heartbeat_s, or loses its connection
//     without a goodbye, names rank 0 the same way;
//   - a rank ending on purpose (finished, or reporting its own error) says goodbye first
//     (Heartbeat::stop), so it is never reported lost;
//   - a rank the job can go on without (`droppable`: an asynchronous parameter server's worker,
//     docs/parameter_server.md) is dropped instead: the watcher names it the same way, tells the
//     others ("D"), and everyone goes on (heartbeat_dropped_ranks). Its process is held until the
//     survivors have finished (finish_together), then ended: until then the launcher must not see
//     it end (hydra and srun end the job when a process does; the supervisor holds a killed rank,
//     tools/rank_supervisor.cpp).
// Bound: a stopped rank is named within heartbeat_s + 1.5 s, and every survivor has ended
// within about 1 s more; a dead one at once. A live rank that makes no progress (a deadlock) is
// still comm.timeout_s's to catch.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "job/rank_table.h"
#include "parallel/comm/communicator.h"

namespace triax {

/// One line of the protocol (text, '\n'-terminated):
///   beat     "B STEP ACTION"      (rank -> watcher; the watcher's own beat is "B 0 -")
///   goodbye  "X"                  (ending on purpose; either way)
///   lost     "L R1,R2 SILENT TEXT" (watcher -> ranks: these are lost; SILENT 1 = stopped or
///            cut off, else ended)
///   dropped  "D R1,R2 SILENT G1,G2 TEXT" (watcher -> ranks, the dropped included: these are
///            lost and the job goes on; G: their process groups, from their hellos "H RANK PGID")
///   finished "F" (rank -> watcher: done, waiting for the others: finish_together)
///   go       "G" (watcher -> ranks: every rank still here has finished)
struct HeartbeatMessage {
  char kind = 0;  ///< 'B', 'X', 'L', 'D', 'F', 'G'; 0 for a malformed line
  int64_t step = 0;
  std::vector<int> ranks;   ///< the lost ranks
  std::vector<long> pgids;  ///< a drop: their process groups
  bool silent = false;
  std::string text;  ///< the beat's last action, or the lost rank's description
};
HeartbeatMessage parse_heartbeat_line(const std::string& line);

/// What the ranks are, for the heartbeat: `names[r]` ("parameter server 0") is shown beside rank
/// r where it is named ("" or missing: nothing); `droppable`: the ranks whose loss the job
/// survives.
struct HeartbeatRoles {
  std::vector<std::string> names;
  std::vector<int> droppable;
};

/// The dropped ranks' processes at the end (finish_together).
struct HeldProcesses {
  std::vector<long> mine;  ///< to SIGKILL from this rank: process groups as negative ids
  /// Rank 0: dropped ranks no survivor can end (none left on their host, or no process group of
  /// their own): the job must be ended through the launcher (World::abort).
  std::vector<int> orphaned;
};

class Heartbeat {
 public:
  /// Starts the heartbeat of this rank (a collective over `world`: rank 0's address reaches the
  /// others, which connect). `lost_after_s` <= 0: none. Throws Error when a rank cannot reach
  /// rank 0's watcher (naming the addresses tried, and comm.heartbeat_s: 0 to go without).
  /// `roles`: what each rank is, shown where it is named, and which ranks the job goes on
  /// without (see above); by default none are named or dropped.
  Heartbeat(Communicator& world, const RankTable& table, double lost_after_s,
            HeartbeatRoles roles = {});
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  /// Says goodbye, stops the thread and waits (up to 2 s) until the peers have closed too: this
  /// rank ends on purpose. (The destructor waits up to 0.5 s.)
  void stop();
  /// Where ranks may be dropped, instead of a final barrier: waits (up to `timeout_s`) until
  /// every rank still here has called this too. Returns what end_held_processes ends once this
  /// rank's own work is over (the launcher may end the job as soon as one of them ends).
  HeldProcesses finish_together(double timeout_s);

  struct State;  ///< the thread's (job/heartbeat.cpp)

 private:
  void end(bool linger);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

/// The heartbeat of this process, if one runs (for the failure path's goodbye).
void heartbeat_goodbye();
/// The ranks the heartbeat of this process dropped so far, ascending (empty without one).
std::vector<int> heartbeat_dropped_ranks();
/// SIGKILLs what finish_together returned for this rank (`mine`).
void end_held_processes(const HeldProcesses& held);

}  // namespace triax
