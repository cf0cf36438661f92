// The failure policy's decisions (job/failure_policy.h), without a world: how long to wait, who
// prints the summary, whom to kill, and how a lost connection is named as ranks.
#include <catch2/catch.hpp>

#include "job/failure_policy.h"

using Catch::Contains;
using namespace triax;

TEST_CASE("after a timeout ranks wait a grace period; after an error they abort at once", "[job]") {
  const FailureResponse error = respond_to_failure(false, Backend::kMpi, 0, 300, true);
  CHECK(error.grace_seconds == 0);
  CHECK_FALSE(error.print_summary);
  CHECK_FALSE(error.kill_silent_ranks);

  // comm.timeout_s / 4, clamped to 1..10 s; rank 0 waits half, then summarises.
  CHECK(respond_to_failure(true, Backend::kMpi, 1, 300, true).grace_seconds == 10);
  CHECK(respond_to_failure(true, Backend::kMpi, 1, 20, true).grace_seconds == 5);
  CHECK(respond_to_failure(true, Backend::kMpi, 1, 2, true).grace_seconds == 1);
  const FailureResponse root = respond_to_failure(true, Backend::kMpi, 0, 20, true);
  CHECK(root.grace_seconds == 2.5);
  CHECK(root.print_summary);
  CHECK_FALSE(root.kill_silent_ranks);  // mpirun ends the job itself
  CHECK_FALSE(respond_to_failure(true, Backend::kMpi, 0, 20, false).print_summary);

  // Under torchrun a stopped rank ignores the agent's SIGTERM: the survivors kill it.
  CHECK(respond_to_failure(true, Backend::kTcp, 2, 20, true).kill_silent_ranks);
  CHECK_FALSE(respond_to_failure(true, Backend::kTcp, 2, 20, false).kill_silent_ranks);
}

TEST_CASE("a lost connection is named as the ranks of the peer's host", "[job]") {
  const RankTable table{{0, "n1", 1}, {1, "n1", 2}, {2, "n2", 3}, {3, "n2", 4}};
  const auto host_of = [](const std::string& address) {
    return address == "10.77.0.2" ? std::string("n2.cluster") : std::string();
  };
  const std::string message =
      "recv from rank 2 failed: Connection closed by peer [10.77.0.2]:41234";
  CHECK_THAT(peer_ranks_note(message, table, host_of),
             Contains("the lost connection was to 10.77.0.2 = host n2.cluster, where ranks 2,3 "
                      "ran") &&
                 Contains("that node was lost"));
  CHECK(peer_ranks_note("waited 10 s for recv from rank 3", table, host_of).empty());
  CHECK(peer_ranks_note("closed by peer [10.77.0.9]:1", table, host_of).empty());  // no name
  const RankTable elsewhere{{0, "n1", 1}};
  CHECK(peer_ranks_note(message, elsewhere, host_of).empty());  // no rank ran there
}

TEST_CASE("only same-host ranks without a flight record are killed, never oneself", "[job]") {
  const RankTable table{{0, "n1", 10}, {1, "n1", 11}, {2, "n1", 12}, {3, "n2", 13}, {4, "n1", 0}};
  const auto has_record = [](int rank) { return rank == 1; };
  const std::vector<RankEntry> silent = silent_local_ranks(table, "n1", 0, has_record);
  REQUIRE(silent.size() == 1);  // not 0 (itself), 1 (wrote a record), 3 (other host), 4 (no pid)
  CHECK(silent[0].rank == 2);
  CHECK(silent[0].pid == 12);
}
