#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "core/config.h"
#include "core/error.h"

using Catch::Contains;
using triax::ConfigError;
using triax::parse_config;

TEST_CASE("defaults when the file is empty", "[config]") {
  const auto config = parse_config("");
  CHECK(config.parallel.tensor == 1);
  CHECK(config.parallel.order == "tp-dp-pp");
  CHECK(config.train.global_batch == 64);
  CHECK(config.model.mlp_hidden == std::vector<int64_t>{256, 128});
}

TEST_CASE("values are read into the typed structs", "[config]") {
  const auto config = parse_config(R"(
model: {arch: mlp, mlp_hidden: [32]}
parallel: {tensor: 2, pipeline: 4, order: pp-dp-tp}
train: {global_batch: 128, micro_batch: 8, lr: 0.001, optimizer: adamw, shuffle: false}
data: {train_samples: 100}
)");
  CHECK(config.model.mlp_hidden == std::vector<int64_t>{32});
  CHECK(config.parallel.tensor == 2);
  CHECK(config.parallel.pipeline == 4);
  CHECK(config.parallel.order == "pp-dp-tp");
  CHECK(config.train.global_batch == 128);
  CHECK(config.train.micro_batch == 8);
  CHECK(config.train.lr == Approx(0.001));
  CHECK(config.train.optimizer == triax::OptimizerKind::kAdamW);
  CHECK_FALSE(config.train.shuffle);
  CHECK(config.data.train_samples == 100);
}

TEST_CASE("unknown keys are errors with the closest valid key", "[config]") {
  CHECK_THROWS_WITH(parse_config("parallel: {tensr: 2}"),
                    Contains("parallel.tensr: unknown key (did you mean 'parallel.tensor'?"));
  CHECK_THROWS_WITH(parse_config("trian: {lr: 0.1}"),
                    Contains("trian: unknown key (did you mean 'train'?"));
  CHECK_THROWS_WITH(parse_config("parallel: {zzzzzz: 2}"),
                    Contains("valid keys under parallel: tensor, pipeline, data, order"));
}

TEST_CASE("wrong types and ranges name the key, the value and what is valid", "[config]") {
  CHECK_THROWS_WITH(parse_config("parallel: {tensor: two}"),
                    Contains("parallel.tensor: 'two' is not an integer (valid: integers >= 1)"));
  CHECK_THROWS_WITH(parse_config("parallel: {tensor: 0}"),
                    Contains("parallel.tensor: 0 is out of range (valid: integers >= 1)"));
  CHECK_THROWS_WITH(parse_config("train: {lr: -1}"),
                    Contains("train.lr: -1 is out of range (valid: numbers > 0 and <= 10)"));
  CHECK_THROWS_WITH(parse_config("train: {optimizer: adam}"),
                    Contains("'adam' is not a valid choice (valid: sgd, adamw; did you mean "
                             "'adamw'?)"));
  CHECK_THROWS_WITH(parse_config("train: {shuffle: maybe}"),
                    Contains("train.shuffle: 'maybe' is not a boolean"));
  CHECK_THROWS_WITH(parse_config("model: {mlp_hidden: 5}"),
                    Contains("model.mlp_hidden: '5' is not a list"));
  CHECK_THROWS_WITH(parse_config("train: 3"), Contains("train: '3' is not a section"));
}

TEST_CASE("every problem is reported, not just the first", "[config]") {
  try {
    parse_config("parallel: {tensor: 0, pipeline: x}\ntrain: {lrr: 1}");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Contains("parallel.tensor"));
    CHECK_THAT(message, Contains("parallel.pipeline"));
    CHECK_THAT(message, Contains("train.lrr"));
  }
}

TEST_CASE("--set overrides are applied and validated like the file", "[config]") {
  const auto config =
      parse_config("train: {lr: 0.1}", {"train.lr=0.5", "model.mlp_hidden=[8, 4]", "run.dir=x"});
  CHECK(config.train.lr == Approx(0.5));
  CHECK(config.model.mlp_hidden == std::vector<int64_t>{8, 4});
  CHECK(config.run.dir == "x");
  CHECK_THROWS_WITH(parse_config("", {"train.lr=abc"}),
                    Contains("train.lr: 'abc' is not a number") && Contains("(from --set)"));
  CHECK_THROWS_WITH(parse_config("", {"train.lrr=1"}),
                    Contains("train.lrr: unknown key (from --set) (did you mean 'train.lr'?"));
  CHECK_THROWS_WITH(parse_config("", {"train.lr"}), Contains("expected section.key=value"));
  CHECK_THROWS_WITH(parse_config("train: {lr: 0.1}", {"train.lr.x=1"}),
                    Contains("train.lr is a value"));
  CHECK_THROWS_WITH(parse_config("", {"train.lr.x=1"}),
                    Contains("train.lr: {x: 1} is not a number"));
}

TEST_CASE("invalid YAML names the line", "[config]") {
  CHECK_THROWS_WITH(parse_config("train: {lr: [1,", {}, "bad.yaml"),
                    Contains("bad.yaml:") && Contains("not valid YAML"));
}

TEST_CASE("the resolved config round-trips", "[config]") {
  const auto config = parse_config("parallel: {tensor: 2}\ntrain: {lr: 0.25, shuffle: false}",
                                   {"model.mlp_hidden=[3]"});
  const auto again = parse_config(triax::to_yaml(config));
  CHECK(triax::to_yaml(again) == triax::to_yaml(config));
  CHECK(again.parallel.tensor == 2);
  CHECK(again.train.lr == Approx(0.25));
  CHECK(again.model.mlp_hidden == std::vector<int64_t>{3});
}

TEST_CASE("every key is documented", "[config]") {
  const std::string keys = triax::describe_config_keys();
  CHECK_THAT(keys, Contains("parallel.tensor  (integers >= 1; default 1)"));
  CHECK_THAT(keys, Contains("train.optimizer  (sgd | adamw; default \"sgd\")"));
}

TEST_CASE("a missing file is a clear error", "[config]") {
  CHECK_THROWS_WITH(triax::load_config("/nonexistent/x.yaml"),
                    Contains("/nonexistent/x.yaml: cannot open"));
}

TEST_CASE("docs/config.md documents every key as the code defines it", "[config]") {
  const char* source = std::getenv("TRIAX_SOURCE_DIR");
  if (source == nullptr) {
    WARN("TRIAX_SOURCE_DIR is not set (CTest sets it): docs/config.md not checked");
    return;
  }
  std::ifstream in(std::string(source) + "/docs/config.md");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string begin = "<!-- keys:begin -->\n", end = "<!-- keys:end -->";
  const auto from = text.find(begin);
  const auto to = text.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  INFO("docs/config.md is out of date: run tools/update_config_doc.sh");
  CHECK(text.substr(from + begin.size(), to - from - begin.size()) ==
        triax::describe_config_markdown());
}

TEST_CASE("closed choices are enums spelled as in the YAML", "[config]") {
  using namespace triax;
  const Config config = parse_config(
      "model:\n  arch: gpt\ntrain:\n  recompute: selective\nschedule:\n  name: interleaved\n"
      "ddp:\n  hierarchical: leader\ncomm:\n  backend: tcp\n");
  CHECK(config.model.arch == ModelKind::kGpt);
  CHECK(config.train.recompute == Recompute::kSelective);
  CHECK(config.schedule.name == ScheduleKind::kInterleaved);
  CHECK(config.ddp.hierarchical == Hierarchical::kLeader);
  CHECK(config.comm.backend == Backend::kTcp);
  // Written back with the same spelling, so a resolved config reads back equal.
  const Config again = parse_config(to_yaml(config));
  CHECK(again.schedule.name == ScheduleKind::kInterleaved);
  CHECK(again.ddp.hierarchical == Hierarchical::kLeader);
  CHECK(str(ScheduleKind::k1F1B, " ", LrDecay::kCosine, " ", OptimizerKind::kAdamW) ==
        "1f1b cosine adamw");
  CHECK(choice_from<Recompute>("full") == Recompute::kFull);
  CHECK_THROWS_WITH(choice_from<Recompute>("half"),
                    Contains("'half' is not a valid choice (valid: none, full, selective)"));
  CHECK_THROWS_WITH(parse_config("train:\n  lr_decay: cosin\n"),
                    Contains("train.lr_decay") && Contains("did you mean 'cosine'"));
}
