#include <catch2/catch.hpp>

#include "core/error.h"
#include "tools/cli_args.h"

using Catch::Contains;
using triax::parse_cli_args;

TEST_CASE("train with overrides", "[cli]") {
  const auto args = parse_cli_args({"train", "c.yaml", "--set", "train.lr=0.1", "--set=a.b=2"});
  CHECK(args.command == "train");
  CHECK(args.config_path == "c.yaml");
  CHECK(args.overrides == std::vector<std::string>{"train.lr=0.1", "a.b=2"});
}

TEST_CASE("help and mistakes", "[cli]") {
  CHECK(parse_cli_args({}).command == "help");
  CHECK(parse_cli_args({"--help"}).command == "help");
  CHECK_THAT(triax::usage(), Contains("train CONFIG") && Contains("config CONFIG"));
  CHECK_THROWS_WITH(parse_cli_args({"trian", "c.yaml"}), Contains("did you mean 'train'?"));
  CHECK_THROWS_WITH(parse_cli_args({"train", "c.yaml", "--sett", "x=1"}),
                    Contains("unknown option '--sett' (did you mean '--set'?)"));
  CHECK_THROWS_WITH(parse_cli_args({"train"}), Contains("needs a CONFIG file"));
  CHECK_THROWS_WITH(parse_cli_args({"train", "c.yaml", "--set"}), Contains("--set needs a value"));
  CHECK_THROWS_WITH(parse_cli_args({"config", "c.yaml", "--world", "x"}),
                    Contains("not a positive integer"));
  CHECK(parse_cli_args({"config", "--describe"}).describe);
  // --help anywhere asks for help (the command's own needs are not checked), but a --rank
  // outside --world is still refused.
  CHECK(parse_cli_args({"train", "--help"}).command == "help");
  CHECK_THROWS_WITH(parse_cli_args({"plan", "c.yaml", "--world", "4", "--rank", "9", "--help"}),
                    Contains("--rank 9: not a rank of --world 4"));
  // Every option is offered as a correction, not only a few.
  CHECK_THROWS_WITH(parse_cli_args({"prepare-data", "a", "--out", "o", "--tokenzer", "t"}),
                    Contains("did you mean '--tokenizer'?"));
}

TEST_CASE("prepare-data and plot take inputs and --out", "[cli]") {
  const auto prepare =
      parse_cli_args({"prepare-data", "a.txt", "dir", "--out", "data/x", "--val-fraction", "0.1"});
  CHECK(prepare.inputs == std::vector<std::string>{"a.txt", "dir"});
  CHECK(prepare.out == "data/x");
  CHECK(prepare.val_fraction == 0.1);
  CHECK_THROWS_WITH(parse_cli_args({"prepare-data", "a.txt"}), Contains("--out DIR"));
  CHECK_THROWS_WITH(parse_cli_args({"prepare-data", "a", "--out", "o", "--val-fraction", "1.5"}),
                    Contains("not a fraction (valid: 0 <= f < 1)"));
  CHECK(parse_cli_args({"plot", "runs/x"}).inputs == std::vector<std::string>{"runs/x"});
  CHECK_THROWS_WITH(parse_cli_args({"plot"}), Contains("needs one RUN_DIR"));
  CHECK(parse_cli_args({"config", "--describe", "--markdown"}).markdown);
}

TEST_CASE("reshard, export and import name what they need", "[cli]") {
  const auto reshard = parse_cli_args(
      {"reshard", "ckpt", "--tensor", "4", "--pipeline", "1", "--chunks", "2", "--out", "dst"});
  CHECK(reshard.inputs == std::vector<std::string>{"ckpt"});
  CHECK(reshard.tensor == 4);
  CHECK(reshard.pipeline == 1);
  CHECK(reshard.chunks == 2);
  CHECK_THROWS_WITH(parse_cli_args({"reshard", "ckpt", "--out", "dst"}),
                    Contains("--tensor T --pipeline P --out DST_DIR"));
  CHECK_THROWS_WITH(parse_cli_args({"reshard", "c", "--tensor", "0"}),
                    Contains("--tensor: '0' is not a positive integer"));
  CHECK_THROWS_WITH(parse_cli_args({"export", "ckpt"}), Contains("--out FULL_MODEL.safetensors"));
  CHECK(parse_cli_args({"train", "c.yaml", "--resume", "latest"}).resume == "latest");
}

TEST_CASE("plan and calibrate", "[cli]") {
  const auto plan =
      parse_cli_args({"plan", "c.yaml", "--world", "64", "--nodes", "8", "--memory-per-rank",
                      "8GiB", "--profile", "p.yaml", "--top", "0", "--csv"});
  CHECK(plan.command == "plan");
  CHECK(plan.config_path == "c.yaml");
  CHECK(plan.world == 64);
  CHECK(plan.nodes == 8);
  CHECK(plan.memory_per_rank == 8.0 * 1024 * 1024 * 1024);
  CHECK(plan.profile == "p.yaml");
  CHECK(plan.top == 0);
  CHECK(plan.csv);
  CHECK(plan.rank == -1);
  CHECK(parse_cli_args({"plan", "c.yaml", "--world", "4", "--memory-per-rank", "1500"})
            .memory_per_rank == 1500);
  CHECK(parse_cli_args({"plan", "c.yaml", "--world", "4", "--memory-per-rank", "512M"})
            .memory_per_rank == 512.0 * 1024 * 1024);
  const auto dry = parse_cli_args({"plan", "c.yaml", "--world", "1024", "--rank", "0", "--groups"});
  CHECK(dry.rank == 0);
  CHECK(dry.groups);
  CHECK_THROWS_WITH(parse_cli_args({"plan", "c.yaml"}), Contains("needs --world N"));
  CHECK_THROWS_WITH(parse_cli_args({"plan", "c.yaml", "--world", "4", "--rank", "4"}),
                    Contains("--rank 4: not a rank of --world 4 (valid: 0 .. 3)"));
  CHECK_THROWS_WITH(parse_cli_args({"plan", "c.yaml", "--world", "4", "--memory-per-rank", "8TB"}),
                    Contains("'8TB' is not a size"));
  CHECK_THROWS_WITH(parse_cli_args({"plan", "--world", "4"}), Contains("needs a CONFIG file"));
  const auto calibrate = parse_cli_args({"calibrate", "c.yaml", "--out", "p.yaml"});
  CHECK(calibrate.command == "calibrate");
  CHECK(calibrate.out == "p.yaml");
  CHECK_THAT(triax::usage(), Contains("plan CONFIG --world N") && Contains("calibrate CONFIG"));
}
