// The rank table's format (job/rank_table.h): written and read back, malformed lines skipped,
// hosts matched by full or short name.
#include <catch2/catch.hpp>

#include <filesystem>

#include "job/rank_table.h"

using namespace triax;

TEST_CASE("the rank table round-trips and parses what the readers read", "[job]") {
  const RankTable table{{0, "n1", 101}, {1, "n1", 102}, {2, "n2.cluster", 201}};
  CHECK(format_rank_table(table) == "0 n1 101\n1 n1 102\n2 n2.cluster 201\n");
  const RankTable back = parse_rank_table(format_rank_table(table));
  REQUIRE(back.size() == 3);
  CHECK(back[2].rank == 2);
  CHECK(back[2].host == "n2.cluster");
  CHECK(back[2].pid == 201);

  const auto path = std::filesystem::temp_directory_path() / "triax_test_ranks.txt";
  write_rank_table(table, path.string());
  CHECK(format_rank_table(read_rank_table(path.string())) == format_rank_table(table));
  std::filesystem::remove(path);
  CHECK(read_rank_table(path.string()).empty());  // missing: empty, not an error
}

TEST_CASE("malformed rank-table lines are skipped", "[job]") {
  const RankTable table =
      parse_rank_table("0 n1 7\nnot a line\n1 n1\n2 n2 9 extra\n-1 n3 4\n3 n3 8");
  REQUIRE(table.size() == 2);
  CHECK(table[0].rank == 0);
  CHECK(table[1].rank == 3);  // the last line needs no newline
}

TEST_CASE("ranks on a host match its full or short name", "[job]") {
  const RankTable table{{0, "n1", 1}, {1, "n2", 2}, {2, "n2", 3}, {3, "n3", 4}};
  CHECK(ranks_on_host(table, "n2") == std::vector<int>{1, 2});
  CHECK(ranks_on_host(table, "n2.cluster.local") == std::vector<int>{1, 2});
  CHECK(ranks_on_host(table, "n4").empty());
}
