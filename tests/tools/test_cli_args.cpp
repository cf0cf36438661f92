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
