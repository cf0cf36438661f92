// ParallelContext under mpiexec: for every (tp, pp) that divides the world, each sub-communicator
// must hold exactly the ranks the pure layout says, which a sum of global ranks over it proves.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "core/strings.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/parallel_context.h"
#include "support/test_world.h"

using triax::Axis;
using triax::ParallelContext;
using triax::ParallelLayout;

namespace {

int64_t sum_of_ranks(triax::Communicator& group, int rank) {
  torch::Tensor t = torch::full({1}, rank, torch::kLong);
  group.all_reduce(t);
  return t.item<int64_t>();
}

int64_t sum(const std::vector<int>& ranks) {
  return std::accumulate(ranks.begin(), ranks.end(), 0);
}

}  // namespace

TEST_CASE("every layout's groups hold the ranks the layout says", "[mpi][context]") {
  std::shared_ptr<triax::Communicator> world = triax::testing::test_world();
  const int n = world->size();
  const int r = world->rank();
  for (int tp = 1; tp <= n; ++tp) {
    for (int pp = 1; tp * pp <= n; ++pp) {
      if (n % (tp * pp) != 0) continue;
      for (const char* order : {"tp-dp-pp", "pp-dp-tp"}) {
        INFO("world " << n << " tp " << tp << " pp " << pp << " order " << order);
        const auto layout = ParallelLayout::create(n, tp, pp, order);
        ParallelContext context(world, layout);
        CHECK(context.coord() == layout.coord_of(r));
        CHECK(sum_of_ranks(context.tp(), r) == sum(layout.group_of(Axis::kTp, r)));
        CHECK(sum_of_ranks(context.dp(), r) == sum(layout.group_of(Axis::kDp, r)));
        CHECK(sum_of_ranks(context.pp(), r) == sum(layout.group_of(Axis::kPp, r)));
        CHECK(context.model_parallel().size() == tp * pp);
        CHECK((context.embedding() != nullptr) ==
              (context.is_first_stage() || context.is_last_stage()));
        if (context.embedding() != nullptr) {
          CHECK(context.embedding()->size() == (pp == 1 ? 1 : 2));
        }
        const auto stages = layout.group_of(Axis::kPp, r);
        CHECK(context.prev_stage_rank() ==
              (context.pp_rank() > 0 ? stages[context.pp_rank() - 1] : -1));
        CHECK(context.next_stage_rank() ==
              (context.pp_rank() + 1 < pp ? stages[context.pp_rank() + 1] : -1));
      }
    }
  }
}

TEST_CASE("a context-parallel layout's cp and dp x cp groups", "[mpi][context]") {
  std::shared_ptr<triax::Communicator> world = triax::testing::test_world();
  const int n = world->size();
  const int r = world->rank();
  if (n % 2 != 0) return;
  for (int tp : {1, 2}) {
    if (n % (2 * tp) != 0) continue;
    INFO("world " << n << " cp 2 tp " << tp);
    const auto layout = ParallelLayout::create(n, tp, 1, "tp-dp-pp", 2);
    ParallelContext context(world, layout);
    CHECK(context.cp_size() == 2);
    CHECK(context.cp_rank() == layout.coord_of(r).cp);
    CHECK(sum_of_ranks(context.cp(), r) == sum(layout.group_of(Axis::kCp, r)));
    CHECK(sum_of_ranks(context.dp(), r) == sum(layout.group_of(Axis::kDp, r)));
    CHECK(context.replica().size() == context.dp_size() * 2);
    for (const auto& group : layout.replica_groups()) {
      if (std::find(group.begin(), group.end(), r) != group.end()) {
        CHECK(sum_of_ranks(context.replica(), r) == sum(group));
      }
    }
    CHECK(context.dp_gradients().size() == context.replica().size());
    CHECK_THAT(context.prefix(), Catch::Contains(triax::str(" cp", context.cp_rank(), " tp")));
  }
}

TEST_CASE("the message prefix names rank and coordinates", "[mpi][context]") {
  std::shared_ptr<triax::Communicator> world = triax::testing::test_world();
  ParallelContext context(world, ParallelLayout::create(world->size(), 1, 1));
  CHECK(context.prefix() == triax::str("[rank ", world->rank(), " dp", world->rank(), " tp0 pp0]"));
}
