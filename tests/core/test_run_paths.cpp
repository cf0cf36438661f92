// Every path under run.dir from one owner (core/run_paths.h), and none without a run.dir.
#include <catch2/catch.hpp>

#include "core/run_paths.h"

using namespace triax;

TEST_CASE("run paths spell the run.dir layout", "[run_paths]") {
  const RunPaths paths("runs/x");
  CHECK(paths.enabled());
  CHECK(paths.resolved_config() == "runs/x/config.resolved.yaml");
  CHECK(paths.rank_table() == "runs/x/ranks.txt");
  CHECK(paths.metrics() == "runs/x/metrics.jsonl");
  CHECK(paths.sample() == "runs/x/sample.txt");
  CHECK(paths.loss_plot() == "runs/x/loss.png");
  CHECK(paths.checkpoints() == "runs/x/checkpoints");
  CHECK(paths.flight_record(3) == "runs/x/flight/rank_3.json");
  CHECK(paths.flight_record(3) == paths.flight_dir() + "/" + RunPaths::flight_record_name(3));
  CHECK(paths.died() == "runs/x/flight/died.txt");
  CHECK(paths.ended_mark(2) == "runs/x/flight/ended/rank_2");
  CHECK(paths.done_mark(2) == paths.ended_dir() + "/done_2");
}

TEST_CASE("without a run.dir nothing is written", "[run_paths]") {
  const RunPaths none("");
  CHECK_FALSE(none.enabled());
  CHECK(none.metrics().empty());
  CHECK(none.flight_dir().empty());
  CHECK(none.checkpoints().empty());
}
