// The node-aware all-reduce (ddp.hierarchical) on pretend nodes: ranks are placed on nodes by
// made-up node keys, so one machine checks every arrangement. It must equal the flat all-reduce
// for any size, shape, dtype and op; keep many all-reduces in flight and finish them in any
// order (collectives are matched by issue order, so a rank that advanced them in another order
// would mix their data up); refuse unequal nodes; and train the GPT like the flat one.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "parallel/comm/hierarchical_communicator.h"
#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "train/trainer.h"

using namespace triax;
using Catch::Matchers::Contains;

namespace {

// Node arrangements of n ranks: L consecutive ranks per node for every L dividing n, and one
// round-robin arrangement (node = rank % N), whose nodes are not contiguous.
std::vector<std::vector<int>> arrangements(int n) {
  std::vector<std::vector<int>> out;
  for (int local = 1; local <= n; ++local) {
    if (n % local != 0) continue;
    std::vector<int> nodes;
    for (int r = 0; r < n; ++r) nodes.push_back(r / local);
    out.push_back(nodes);
    if (local > 1 && local < n) {
      std::vector<int> round_robin;
      for (int r = 0; r < n; ++r) round_robin.push_back(r % (n / local));
      out.push_back(round_robin);
    }
  }
  return out;
}

torch::Tensor data_of(int rank, int64_t numel, torch::ScalarType dtype, int salt) {
  torch::manual_seed(100 * rank + salt);
  return torch::randn({numel}, torch::TensorOptions().dtype(dtype));
}

}  // namespace

TEST_CASE("hierarchical all-reduce equals the flat one", "[mpi][hier]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (const auto scheme :
       {HierarchicalCommunicator::Scheme::kScatter, HierarchicalCommunicator::Scheme::kLeader}) {
    for (const std::vector<int>& nodes : arrangements(n)) {
      HierarchicalCommunicator hier(*world, nodes, scheme);
      INFO("nodes of ranks " << join(nodes, ",")
                             << (scheme == HierarchicalCommunicator::Scheme::kLeader ? " leader"
                                                                                     : " scatter"));
      CHECK(hier.local_size() * hier.num_nodes() == n);
      for (int64_t numel : {1, 7, 1000, 4096}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
          for (torch::ScalarType dtype : {torch::kFloat, torch::kDouble}) {
            INFO("numel " << numel << " op " << reduce_op_name(op) << " dtype " << dtype);
            torch::Tensor want = data_of(world->rank(), numel, dtype, 1);
            torch::Tensor got = want.clone();
            world->all_reduce(want, op);
            hier.all_reduce(got, op);
            CHECK(torch::allclose(got, want, 1e-6, 1e-6));
          }
        }
      }
      // Non-contiguous 2-D input, reduced in place through a copy.
      torch::Tensor base = data_of(world->rank(), 35, torch::kFloat, 2).view({5, 7});
      torch::Tensor want = base.t().clone();
      torch::Tensor got = base.t();
      world->all_reduce(want);
      hier.all_reduce(got);
      CHECK(torch::allclose(base.t(), want, 1e-6, 1e-6));
      torch::Tensor empty = torch::empty({0});
      hier.all_reduce(empty);  // no collective, done at once
    }
  }
}

TEST_CASE("many hierarchical all-reduces in flight finish in any order", "[mpi][hier]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  const int rank = world->rank();
  for (const auto scheme :
       {HierarchicalCommunicator::Scheme::kScatter, HierarchicalCommunicator::Scheme::kLeader}) {
    for (const std::vector<int>& nodes : arrangements(n)) {
      HierarchicalCommunicator hier(*world, nodes, scheme);
      std::vector<torch::Tensor> tensors, expected;
      std::vector<WorkPtr> works;
      for (int k = 0; k < 12; ++k) {
        const int64_t numel = 1 + 37 * k;
        tensors.push_back(torch::full({numel}, static_cast<float>(rank + 1) * (k + 1)));
        expected.push_back(torch::full({numel}, static_cast<float>(n * (n + 1) / 2) * (k + 1)));
        works.push_back(hier.all_reduce_async(tensors.back(), ReduceOp::kSum));
      }
      // Each rank polls in its own order and pace, then waits from the last issued to the first.
      for (int round = 0; round < 20; ++round) {
        for (int k = 0; k < 12; ++k) {
          works[static_cast<size_t>(rank % 2 == 0 ? k : 11 - k)]->is_completed();
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50 * (rank % 3)));
      }
      for (int k = 11; k >= 0; --k) works[static_cast<size_t>(k)]->wait();
      for (int k = 0; k < 12; ++k) {
        INFO("all-reduce " << k << ", nodes of ranks " << join(nodes, ","));
        CHECK(torch::equal(tensors[static_cast<size_t>(k)], expected[static_cast<size_t>(k)]));
      }
    }
  }
}

TEST_CASE("unequal ranks per node are refused, naming the counts", "[mpi][hier]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  if (n < 3) return;
  std::vector<int> nodes(static_cast<size_t>(n), 1);
  nodes[0] = 0;  // one rank alone on its node
  CHECK_THROWS_WITH(HierarchicalCommunicator(*world, nodes),
                    Contains("unequal numbers of ranks per node (1, " + std::to_string(n - 1)) &&
                        Contains("valid: ddp.hierarchical: false or auto"));
}

TEST_CASE("the context picks the hierarchical all-reduce and warns about tp across nodes",
          "[mpi][hier]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  if (n < 4 || n % 2 != 0) return;
  const std::string node = str("n", world->rank() / (n / 2) + 1);  // 2 pretend nodes
  {
    ParallelContext context(world, ParallelLayout::create(n, 1, 1), node);  // ddp.hierarchical auto
    CHECK(context.nodes().num_nodes() == 2);
    CHECK_THAT(context.dp_gradients().backend(), Contains("+hierarchical"));
    CHECK_THAT(context.dp_choice(), Contains("spans 2 nodes with " + std::to_string(n / 2)));
    ParallelContext leader(world, ParallelLayout::create(n, 1, 1), node, Hierarchical::kLeader);
    CHECK_THAT(leader.dp_choice(), Contains("among node leaders, broadcast in node"));
    ParallelContext always(world, ParallelLayout::create(n, 1, 1), node, Hierarchical::kTrue);
    CHECK_THAT(always.dp_choice(), Contains("reduce-scatter in node"));
    CHECK(&always.dp_gradients() != &always.dp());
    ParallelContext flat(world, ParallelLayout::create(n, 1, 1), node, Hierarchical::kFalse);
    CHECK(&flat.dp_gradients() == &flat.dp());
    CHECK(context.tp_span_warning().empty());
    std::vector<int> all;
    for (int r = 0; r < n; ++r) all.push_back(r);
    CHECK_THAT(context.table(), Contains("dp group 0: [" + join(all, ",") + "] on n1+n2\n") &&
                                    Contains("tp group 0: [0] on n1\n"));
  }
  {
    // tp = n: one tp group over both nodes.
    ParallelContext context(world, ParallelLayout::create(n, n, 1), node);
    CHECK_THAT(context.tp_span_warning(), Contains("span nodes") && Contains("(n1+n2)"));
    CHECK(&context.dp_gradients() == &context.dp());  // dp = 1
    CHECK_THAT(context.dp_choice(), Contains("flat (the dp group is inside one node)"));
  }
}

TEST_CASE("GPT training with the hierarchical all-reduce matches the flat one", "[mpi][hier]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  if (n < 4 || n % 2 != 0) return;
  const std::string node = str("n", world->rank() / (n / 2) + 1);
  for (int tp : {1, 2}) {
    if (n / tp < 4) continue;  // dp must put at least 2 ranks on each node
    INFO("dp " << n / tp << " tp " << tp << " on 2 nodes");
    Config config = testing::tiny_gpt_config(tp, 1, "1f1b", 1);
    config.train.global_batch = 16;
    const ParallelLayout layout = ParallelLayout::from_config(config.parallel, n);
    ParallelContext flat_context(world, layout, node, Hierarchical::kFalse);
    std::vector<double> flat_losses, hier_losses;
    config.ddp.hierarchical = Hierarchical::kFalse;
    Trainer flat(testing::plan_for(config, flat_context), flat_context);
    for (int step = 0; step < 6; ++step) {
      flat_losses.push_back(flat.step(testing::tiny_gpt_batch(step, config)));
    }
    for (const Hierarchical mode : {Hierarchical::kAuto, Hierarchical::kLeader}) {
      INFO("ddp.hierarchical: " << mode);
      config.ddp.hierarchical = mode;
      ParallelContext context(world, layout, node, mode);
      Trainer hier(testing::plan_for(config, context), context);
      CHECK_THAT(
          context.dp_choice(),
          Contains(mode == Hierarchical::kAuto ? "reduce-scatter in node" : "among node leaders"));
      hier_losses.clear();
      for (int step = 0; step < 6; ++step) {
        hier_losses.push_back(hier.step(testing::tiny_gpt_batch(step, config)));
      }
      for (size_t k = 0; k < flat_losses.size(); ++k) {
        CHECK(std::abs(hier_losses[k] - flat_losses[k]) / flat_losses[k] < 1e-5);
      }
      double param_diff = 0;
      const auto want = flat.chunks()[0]->module().parameters();
      const auto have = hier.chunks()[0]->module().parameters();
      for (size_t k = 0; k < want.size(); ++k) {
        param_diff = std::max(param_diff, (have[k] - want[k]).abs().max().item<double>());
      }
      CHECK(param_diff < 5e-5);
    }
  }
}
