// The flight recorder (core/flight_recorder.h): operations are described with their label, step
// and micro-batch; a dump names the pending wait; the summary marks a rank without a record.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/flight_recorder.h"

namespace fs = std::filesystem;
using Catch::Contains;
using namespace triax;

TEST_CASE("flight records describe, dump and summarise", "[flight]") {
  const fs::path dir = fs::temp_directory_path() / "triax_test_flight";
  fs::remove_all(dir);
  flight::set_rank(1, 3);
  flight::set_dump_dir(dir.string());
  flight::set_step(7);
  flight::Event done;
  done.kind = "all-reduce";
  done.group = "dp [0,1]";
  done.bytes = 4 << 20;
  done.seq = 12;
  uint64_t first = 0, second = 0;
  {
    const flight::Label label("DDP bucket 3 of 4");
    first = flight::begin(done);
  }
  flight::end(first);
  CHECK_THAT(flight::describe(first), Contains("all-reduce of DDP bucket 3 of 4 over dp [0,1]") &&
                                          Contains("4.0 MiB") && Contains("collective #12") &&
                                          Contains("step 7"));
  flight::Event recv;
  recv.kind = "recv";
  recv.group = "pp [0,1]";
  recv.peer = 0;
  recv.tag = 16;
  recv.bytes = 256;
  flight::set_microbatch(5);
  second = flight::begin(recv);
  flight::set_microbatch(-1);
  CHECK_THAT(flight::describe(second),
             Contains("recv from rank 0") && Contains("micro-batch 5") && Contains("256 bytes"));

  const std::string path = flight::dump("timeout");
  REQUIRE(path == (dir / "rank_1.json").string());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK_THAT(text.str(), Contains("\"rank\": 1") && Contains("\"reason\": \"timeout\"") &&
                             Contains("\"last\": \"waiting: recv from rank 0") &&
                             Contains("\"what\": \"DDP bucket 3 of 4\""));
  const std::string summary = flight::summary(3);
  CHECK_THAT(summary, Contains("rank 1: waiting: recv from rank 0") &&
                          Contains("rank 0: NO FLIGHT RECORD") &&
                          Contains("rank 2: NO FLIGHT RECORD"));
  flight::end(second);
  flight::set_dump_dir("");
  flight::set_rank(0, 1);
}
