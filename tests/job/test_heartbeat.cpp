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

TEST_CASE("heartbeat lines: anything else is ignored", "[heartbeat]") {
  for (const char* line : {"", "B", "B 1", "L 2", "L 2 1", "XX", "H 3", "garbage"}) {
    CHECK(parse_heartbeat_line(line).kind == 0);
  }
}
