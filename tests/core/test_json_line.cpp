#include <catch2/catch.hpp>

#include <cmath>

#include "core/json_line.h"

TEST_CASE("a JSON line escapes strings and writes non-finite numbers as null", "[json]") {
  triax::JsonLine line;
  line.add("step", int64_t{3})
      .add("loss", 2.5)
      .add("val_loss", std::nan(""))
      .add("note", std::string("a \"b\"\n"))
      .add("mem", std::vector<double>{1, 2.5});
  CHECK(line.str() ==
        R"({"step": 3, "loss": 2.5, "val_loss": null, "note": "a \"b\"\u000a", "mem": [1, 2.5]})");
}
