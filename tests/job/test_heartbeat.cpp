// The heartbeat's wire format (job/heartbeat.h); the behaviour (a stopped rank named within the
// bound, a slow one never, a lost node's ranks together) is tested for real by
// tests/launch/liveness.sh and node_death.sh.
#include <catch2/catch.hpp>

#include "job/heartbeat.h"

using triax::parse_heartbeat_line;

TEST_CASE("heartbeat lines: beat, goodbye, lost", "[heartbeat]") {
  const auto beat = parse_heartbeat_line("B 12 waiting: recv from rank 1 of x (4 bytes)");
  CHECK(beat.kind == 'B');
  CHECK(beat.step == 12);
  CHECK(beat.text == "waiting: recv from rank 1 of x (4 bytes)");
  CHECK(parse_heartbeat_line("B 0 -").kind == 'B');
  CHECK(parse_heartbeat_line("X").kind == 'X');
  const auto lost = parse_heartbeat_line("L 2,3 0 ranks 2 (pid 7 on n2), 3 (pid 8 on n2) are lost");
  CHECK(lost.kind == 'L');
  CHECK(lost.ranks == std::vector<int>{2, 3});
  CHECK_FALSE(lost.silent);
  CHECK(lost.text == "ranks 2 (pid 7 on n2), 3 (pid 8 on n2) are lost");
  CHECK(parse_heartbeat_line("L 5 1 rank 5 is lost").silent);
}

TEST_CASE("heartbeat lines: dropped, finished, go", "[heartbeat]") {
  const auto dropped = parse_heartbeat_line("D 2,5 1 812,900 ranks 2, 5 are lost; the job goes on");
  CHECK(dropped.kind == 'D');
  CHECK(dropped.ranks == std::vector<int>{2, 5});
  CHECK(dropped.pgids == std::vector<long>{812, 900});
  CHECK(dropped.silent);
  CHECK(dropped.text == "ranks 2, 5 are lost; the job goes on");
  CHECK_FALSE(parse_heartbeat_line("D 3 0 0 rank 3 is lost").silent);
  CHECK(parse_heartbeat_line("F").kind == 'F');
  CHECK(parse_heartbeat_line("G").kind == 'G');
}

TEST_CASE("heartbeat lines: anything else is ignored", "[heartbeat]") {
  for (const char* line :
       {"", "B", "B 1", "L 2", "L 2 1", "D 2 1 7", "FF", "GO", "XX", "H 3", "garbage"}) {
    CHECK(parse_heartbeat_line(line).kind == 0);
  }
}
