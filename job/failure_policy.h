// defines: triax::FailureResponse, triax::respond_to_failure, triax::peer_ranks_note,
//          triax::silent_local_ranks, triax::end_job_after_error
//
// What a rank does once the world is up and an error reaches it: the job must end on every rank,
// because its peers may be blocked in a collective this rank will never join. In order:
//   1. tell the death watch this rank ends on purpose (job/death_watch.h), so it is not blamed;
//   2. print the error, and, when it is a lost connection, which ranks ran on the peer's host
//      (peer_ranks_note: a lost node reads as one);
//   3. write this rank's flight record (best effort: a full disk that failed the run fails this
//      too, and nothing may stop the abort);
//   4. after a timeout only: wait a grace period (comm.timeout_s / 4, 1-10 s) so the peers
//      waiting on the same stuck rank time out and report too; rank 0 waits half of it and then
//      prints every rank's last action; under the tcp backend (torchrun), a rank also SIGKILLs
//      same-host ranks that wrote no record — a stopped rank ignores torchrun's SIGTERM and
//      would hold the job for the agent's 30 s kill delay;
//      after a configuration error (exit code 2), wait 0.5 s: several ranks often find the same
//      one at once (a parameter server's workers and servers refuse together), and each must
//      print it before the first abort ends the rest;
//   5. abort the world with the exit code (2 for a configuration error, 1 otherwise).
// The decisions (respond_to_failure), the note and the choice of ranks to kill are pure and
// unit-tested; end_job_after_error carries them out.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "core/config_choices.h"
#include "job/rank_table.h"
#include "parallel/comm/world.h"

namespace triax {

/// Step 4's decisions for one rank.
struct FailureResponse {
  double grace_seconds = 0;        ///< how long to wait before aborting
  bool print_summary = false;      ///< print every rank's last action (rank 0)
  bool kill_silent_ranks = false;  ///< SIGKILL same-host ranks without a flight record
};

/// `timeout`: the error was a TimeoutError; `wrote_record`: this rank's flight record exists.
FailureResponse respond_to_failure(bool timeout, Backend backend, int rank, double timeout_s,
                                   bool wrote_record);

/// For an error naming a peer by address ("[10.0.0.2]:41234"): "the lost connection was to
/// 10.0.0.2 = host n2, where ranks 2,3 ran; ..."; "" when the message names no address, the
/// address has no name (`host_of` returns "") or no rank ran there.
std::string peer_ranks_note(const std::string& message, const RankTable& table,
                            const std::function<std::string(const std::string&)>& host_of);

/// The ranks on `host` other than `self` that have a pid and no flight record.
std::vector<RankEntry> silent_local_ranks(const RankTable& table, const std::string& host, int self,
                                          const std::function<bool(int)>& has_record);

/// Steps 1-5; never returns.
[[noreturn]] void end_job_after_error(const World& world, const std::exception& error,
                                      int exit_code, int rank, int world_size,
                                      const RankTable& table);

}  // namespace triax
