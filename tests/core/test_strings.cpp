#include <catch2/catch.hpp>

#include "core/strings.h"

TEST_CASE("edit distance", "[strings]") {
  CHECK(triax::edit_distance("", "") == 0);
  CHECK(triax::edit_distance("tensor", "tensor") == 0);
  CHECK(triax::edit_distance("tensr", "tensor") == 1);
  CHECK(triax::edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("closest suggests plausible typos only", "[strings]") {
  const std::vector<std::string> keys = {"tensor", "pipeline", "data", "order"};
  CHECK(triax::closest("tensr", keys) == "tensor");
  CHECK(triax::closest("pipelines", keys) == "pipeline");
  CHECK(triax::closest("zzzzzzzz", keys).empty());
}

TEST_CASE("split and join", "[strings]") {
  CHECK(triax::split("a.b.c", '.') == std::vector<std::string>{"a", "b", "c"});
  CHECK(triax::split("a..b", '.') == std::vector<std::string>{"a", "", "b"});
  CHECK(triax::join(std::vector<int>{1, 2, 3}, ", ") == "1, 2, 3");
}
