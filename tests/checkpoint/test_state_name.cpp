// Checkpoint tensor names (checkpoint/state_name.h): every form round-trips through parse/str,
// and a malformed name is refused naming it.
#include <catch2/catch.hpp>

#include "checkpoint/state_name.h"
#include "core/error.h"

using triax::StateName;

TEST_CASE("state names round-trip in every form", "[checkpoint]") {
  for (const std::string name :
       {"c0/layer3.fc.weight", "c12/token_embedding.weight@exp_avg", "c1/ln_f.bias@step",
        "rng/c0/dropout_shared", "rng/c3/dropout_tp_local", "layer0.attn.qkv.weight",
        "head.weight@exp_avg_sq", "cproj.weight@momentum"}) {
    INFO(name);
    CHECK(StateName::parse(name).str() == name);
  }
  const StateName moment = StateName::parse("c2/layer1.fc.weight@exp_avg");
  CHECK(moment.chunk == 2);
  CHECK(moment.parameter == "layer1.fc.weight");
  CHECK(moment.state == "exp_avg");
  CHECK(moment.is_optimizer_state());
  CHECK_FALSE(moment.rng);
  const StateName rng = StateName::parse("rng/c1/dropout_shared");
  CHECK(rng.rng);
  CHECK(rng.chunk == 1);
  CHECK(rng.parameter == "dropout_shared");
  CHECK_FALSE(rng.is_optimizer_state());
}

TEST_CASE("builders, chunk changes and the full-model form", "[checkpoint]") {
  CHECK(StateName::of_parameter(0, "head.weight").str() == "c0/head.weight");
  CHECK(StateName::of_parameter(1, "head.weight", "exp_avg").str() == "c1/head.weight@exp_avg");
  CHECK(StateName::of_rng(2, "dropout_tp_local").str() == "rng/c2/dropout_tp_local");
  const StateName full =
      StateName::parse("c3/layer2.fc.bias@momentum").in_chunk(StateName::kNoChunk);
  CHECK(full.str() == "layer2.fc.bias@momentum");
  CHECK(full.in_chunk(0).str() == "c0/layer2.fc.bias@momentum");
  CHECK(StateName::parse("layer2.fc.bias").chunk == StateName::kNoChunk);
}

TEST_CASE("malformed names are refused, naming them", "[checkpoint]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(StateName::parse("rng/dropout_shared"), Contains("'rng/dropout_shared'"));
  CHECK_THROWS_WITH(StateName::parse("cx/head.weight"), Contains("expected c<chunk>/<parameter>"));
  CHECK_THROWS_WITH(StateName::parse("c0/head.weight@"),
                    Contains("expected <parameter>[@<state>]"));
  CHECK_THROWS_WITH(StateName::parse(""), Contains("expected <parameter>"));
}
