// NodeTopology (pure): nodes numbered by first rank, local ranks, spans, and the group table with
// nodes; the launcher's node index keeps apart nodes that share a hostname.
#include <catch2/catch.hpp>

#include "parallel/node_topology.h"
#include "parallel/parallel_layout.h"

using namespace triax;
using Catch::Matchers::Contains;

TEST_CASE("node topology from node keys", "[nodes]") {
  const NodeTopology nodes({"n2", "n2", "n1", "n1", "n2", "n1"});
  CHECK(nodes.world_size() == 6);
  CHECK(nodes.num_nodes() == 2);
  CHECK(nodes.name(0) == "n2");  // numbered by lowest rank, not by name
  CHECK(nodes.node_of(3) == 1);
  CHECK(nodes.ranks_on(0) == std::vector<int>{0, 1, 4});
  CHECK(nodes.local_rank_of(4) == 2);
  CHECK(nodes.local_rank_of(5) == 2);
  CHECK(nodes.uniform());
  CHECK(nodes.spans_nodes({0, 2}));
  CHECK_FALSE(nodes.spans_nodes({0, 4}));
  CHECK(nodes.describe({5, 0}) == "n2+n1");
  CHECK(nodes.summary() == "2 nodes: n2 ranks [0,1,4], n1 ranks [2,3,5]");
  CHECK_FALSE(NodeTopology({"a", "a", "b"}).uniform());
  CHECK(NodeTopology().num_nodes() == 1);
}

TEST_CASE("a launcher's node index tells apart nodes with one hostname", "[nodes]") {
  const NodeTopology nodes({"pod#0", "pod#0", "pod#1", "pod#1"});
  CHECK(nodes.num_nodes() == 2);
  CHECK(nodes.name(1) == "pod");  // the index only separates, it is not shown
  CHECK(local_node_key(3).find("#3") != std::string::npos);
  CHECK(local_node_key(-1).find('#') == std::string::npos);
}

TEST_CASE("the group table names each group's nodes", "[nodes][layout]") {
  // 2 nodes x 4 ranks, tp2 pp2: tp and dp groups inside a node, pp groups across.
  const NodeTopology nodes({"n1", "n1", "n1", "n1", "n2", "n2", "n2", "n2"});
  const std::string table = ParallelLayout::create(8, 2, 2).table(&nodes);
  CHECK_THAT(table, Contains("tp group 0: [0,1] on n1\n"));
  CHECK_THAT(table, Contains("tp group 3: [6,7] on n2\n"));
  CHECK_THAT(table, Contains("dp group 0: [0,2] on n1\n"));
  CHECK_THAT(table, Contains("pp group 0: [0,4] on n1+n2\n"));
  // Without a topology (or one for another world) the table is the plain one.
  CHECK_THAT(ParallelLayout::create(8, 2, 2).table(), !Contains(" on n"));
}

TEST_CASE("a group's even share of ranks per node", "[nodes]") {
  const NodeTopology nodes({"a", "a", "a", "a", "b", "b", "b", "b"});
  CHECK(nodes.even_share({0, 1, 4, 5}) == 2);  // 2 on each of 2 nodes
  CHECK(nodes.even_share({0, 4}) == 1);
  CHECK(nodes.even_share({0, 1, 2, 4}) == 0);  // 3 and 1
  CHECK(nodes.even_share({0, 1, 2, 3}) == 4);  // one node
}
