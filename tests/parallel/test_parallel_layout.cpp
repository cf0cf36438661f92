#include <catch2/catch.hpp>

#include "core/error.h"
#include "parallel/parallel_layout.h"

using Catch::Contains;
using triax::Axis;
using triax::ParallelLayout;
using triax::RankCoord;
using triax::RankGroups;

TEST_CASE("16 ranks, tp 2, pp 4, Megatron order", "[layout]") {
  const auto layout = ParallelLayout::create(16, 2, 4);
  CHECK(layout.dp_size() == 2);
  CHECK(layout.groups(Axis::kTp) ==
        RankGroups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}});
  CHECK(layout.groups(Axis::kDp) ==
        RankGroups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(layout.groups(Axis::kPp) ==
        RankGroups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}});
  CHECK(layout.model_parallel_groups() ==
        RankGroups{{0, 1, 4, 5, 8, 9, 12, 13}, {2, 3, 6, 7, 10, 11, 14, 15}});
  CHECK(layout.embedding_groups() == RankGroups{{0, 12}, {1, 13}, {2, 14}, {3, 15}});
  CHECK(layout.coord_of(5) == RankCoord{0, 1, 1});  // rank = tp + 2*(dp + 2*pp) = 1 + 2*(0+2)
  CHECK(layout.coord_of(15) == RankCoord{1, 1, 3});
}

TEST_CASE("context parallelism is a fourth axis, after tp unless the order names it", "[layout]") {
  // world 16 = dp 2 x cp 2 x tp 2 x pp 2, order tp-cp-dp-pp: rank = tp + 2 (cp + 2 (dp + 2 pp)).
  const auto layout = ParallelLayout::create(16, 2, 2, "tp-dp-pp", 2);
  CHECK(layout.dp_size() == 2);
  CHECK(layout.cp_size() == 2);
  CHECK(layout.order_string() == "tp-cp-dp-pp");
  CHECK(layout.coord_of(7) == RankCoord{1, 1, 0, 1});  // 7 = 1 + 2 (1 + 2 (1 + 0))
  CHECK(layout.groups(Axis::kCp) ==
        RankGroups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(layout.groups(Axis::kDp) ==
        RankGroups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}});
  // The ranks holding the same weights: same tp and pp.
  CHECK(layout.replica_groups() ==
        RankGroups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}});
  // A model replica: same dp and cp.
  CHECK(layout.model_parallel_groups() ==
        RankGroups{{0, 1, 8, 9}, {2, 3, 10, 11}, {4, 5, 12, 13}, {6, 7, 14, 15}});
  for (int r = 0; r < 16; ++r) CHECK(layout.rank_of(layout.coord_of(r)) == r);
  const auto named = ParallelLayout::create(16, 2, 2, "cp-tp-dp-pp", 2);
  CHECK(named.groups(Axis::kCp).front() == std::vector<int>{0, 1});
  CHECK(named.order_string() == "cp-tp-dp-pp");
  // At cp 1 the axis changes nothing: the same groups and order string as before it existed.
  const auto plain = ParallelLayout::create(16, 2, 2);
  CHECK(plain.order_string() == "tp-dp-pp");
  CHECK(plain.replica_groups() == plain.groups(Axis::kDp));
  CHECK_THROWS_WITH(ParallelLayout::create(12, 2, 2, "tp-dp-pp", 2),
                    Contains("world size 12 is not divisible by parallel.context * "
                             "parallel.tensor * parallel.pipeline = 2 * 2 * 2 = 8"));
  CHECK_THROWS_WITH(ParallelLayout::create(8, 2, 2, "tp-dp-pp", 0),
                    Contains("parallel.context: 0 is out of range"));
  CHECK_THROWS_WITH(ParallelLayout::create(8, 2, 2, "tp-cp-cp-pp", 2),
                    Contains("repeats axis 'cp'"));
}

TEST_CASE("rank_of inverts coord_of for every order", "[layout]") {
  for (const char* order :
       {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"}) {
    const auto layout = ParallelLayout::create(24, 2, 3, order);
    CHECK(layout.order_string() == order);
    for (int r = 0; r < 24; ++r) CHECK(layout.rank_of(layout.coord_of(r)) == r);
    // Every axis partitions the world, with groups of that axis's size.
    for (Axis axis : {Axis::kTp, Axis::kDp, Axis::kPp}) {
      std::vector<int> count(24, 0);
      for (const auto& group : layout.groups(axis)) {
        CHECK(static_cast<int>(group.size()) == layout.size(axis));
        for (int r : group) ++count[static_cast<size_t>(r)];
      }
      CHECK(std::all_of(count.begin(), count.end(), [](int c) { return c == 1; }));
    }
  }
}

TEST_CASE("other orders place the fastest axis on adjacent ranks", "[layout]") {
  const auto dp_first = ParallelLayout::create(8, 2, 2, "dp-tp-pp");  // dp = 2
  CHECK(dp_first.groups(Axis::kDp) == RankGroups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(dp_first.groups(Axis::kTp) == RankGroups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(dp_first.groups(Axis::kPp) == RankGroups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  const auto pp_first = ParallelLayout::create(8, 2, 2, "pp-tp-dp");
  CHECK(pp_first.groups(Axis::kPp) == RankGroups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(pp_first.groups(Axis::kTp) == RankGroups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(pp_first.groups(Axis::kDp) == RankGroups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(pp_first.embedding_groups() == RankGroups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
}

TEST_CASE("pp 1: each rank is its own embedding group", "[layout]") {
  const auto layout = ParallelLayout::create(4, 2, 1);
  CHECK(layout.embedding_groups() == RankGroups{{0}, {1}, {2}, {3}});
  CHECK(layout.dp_size() == 2);
}

TEST_CASE("invalid layouts name the keys, the values and what is valid", "[layout]") {
  CHECK_THROWS_WITH(ParallelLayout::create(6, 2, 2),
                    Contains("world size 6 is not divisible by parallel.tensor * parallel.pipeline "
                             "= 2 * 2 = 4") &&
                        Contains("4, 8, 12"));
  CHECK_THROWS_WITH(ParallelLayout::create(4, 0, 1), Contains("parallel.tensor: 0"));
  CHECK_THROWS_WITH(ParallelLayout::create(4, 1, -1), Contains("parallel.pipeline: -1"));
  CHECK_THROWS_WITH(ParallelLayout::create(0, 1, 1), Contains("world size 0"));
  CHECK_THROWS_WITH(ParallelLayout::create(4, 1, 1, "tp-ddp-pp"),
                    Contains("unknown axis 'ddp' (did you mean 'dp'?)"));
  CHECK_THROWS_WITH(ParallelLayout::create(4, 1, 1, "tp-dp-tp"), Contains("repeats axis 'tp'"));
  CHECK_THROWS_WITH(ParallelLayout::create(4, 1, 1, "tp-dp"), Contains("lacks axis pp"));
}

TEST_CASE("parallel.data is only a check against the launch", "[layout]") {
  triax::ParallelConfig config;
  config.tensor = 2;
  config.data = 2;
  CHECK(ParallelLayout::from_config(config, 4).dp_size() == 2);
  CHECK_THROWS_WITH(ParallelLayout::from_config(config, 8),
                    Contains("parallel.data: 2 does not match this launch, where dp = world / "
                             "(tensor * pipeline) = 8 / (2 * 1) = 4") &&
                        Contains("chosen at launch"));
}

TEST_CASE("the group table lists every group", "[layout]") {
  const std::string table = ParallelLayout::create(8, 2, 2).table();
  CHECK_THAT(table, Contains("world 8 = dp 2 x tp 2 x pp 2, order tp-dp-pp (tp fastest)"));
  CHECK_THAT(table, Contains("tp group 3: [6,7]"));
  CHECK_THAT(table, Contains("pp group 0: [0,4]"));
  CHECK_THAT(table, Contains("embedding group 1: [1,5]"));
}
