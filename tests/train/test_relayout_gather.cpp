// The online re-layout's state gather (checkpoint/redistribute.h) hands every rank the whole
// model through shared memory where the ranks share a node, and sends it otherwise. Under
// mpiexec -n 4, at dp 1 x pp 4 (every rank a writer: the all-gather) and dp 2 x pp 2 (one writer
// in two: a broadcast per writer): both ways give every rank the same tensors, bit for bit, equal
// to the trainers' own state, and the shared way is taken; share_messages gives each rank every
// other's bytes in place, and where one rank cannot share, every rank is told to send; nothing is
// left in /dev/shm after (the re-layout tests hold a resource lock, so no other test makes
// segments meanwhile).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "checkpoint/redistribute.h"
#include "parallel/comm/shared_messages.h"
#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "train/trainer.h"

using namespace triax;

namespace {

int relayout_segments() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    count += entry.path().filename().string().rfind("triax-relayout-", 0) == 0 ? 1 : 0;
  }
  return count;
}

}  // namespace

TEST_CASE("share_messages: every rank's bytes on every rank, in place", "[mpi][relayout_gather]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size(), rank = world->rank();
  // Rank r sends r * 1000 bytes of value r (rank 0 none).
  const int before = relayout_segments();
  world->barrier();
  const int64_t bytes = rank * 1000;
  const auto messages = share_messages(*world, bytes, [&](uint8_t* at) {
    for (int64_t k = 0; k < bytes; ++k) at[k] = static_cast<uint8_t>(rank);
  });
  REQUIRE(messages.has_value());  // the ranks of one mpiexec share this machine's memory
  for (int r = 0; r < n; ++r) {
    const torch::Tensor& m = (*messages)[static_cast<size_t>(r)];
    if (r == 0) {
      CHECK_FALSE(m.defined());
      continue;
    }
    REQUIRE(m.numel() == r * 1000);
    CHECK(m.eq(r).all().item<bool>());
  }
  world->barrier();
  CHECK(relayout_segments() <= before);  // the names went once every rank had mapped them
}

TEST_CASE("share_messages: one rank that cannot share makes every rank send",
          "[mpi][relayout_gather]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int before = relayout_segments();
  world->barrier();
  // The last rank fails while writing its segment (as a full /dev/shm or a lost mapping would):
  // it must not throw past the collectives, and no rank may use the others' segments.
  const int failing = world->size() - 1;
  const auto messages = share_messages(*world, 64, [&](uint8_t* at) {
    if (world->rank() == failing) throw std::runtime_error("no room");
    std::fill(at, at + 64, uint8_t{7});
  });
  CHECK_FALSE(messages.has_value());
  world->barrier();
  CHECK(relayout_segments() <= before);  // the failed one's name went too
}

TEST_CASE("the re-layout's gather: shared and sent alike, bit for bit", "[mpi][relayout_gather]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (const int pp : {n, n / 2}) {
    if (pp < 1 || n % pp != 0) continue;
    INFO("dp " << n / pp << " x pp " << pp);
    ParallelContext context(world, ParallelLayout::create(n, 1, pp));
    Config config = testing::tiny_gpt_config(1, pp, "1f1b", 1);
    config.train.global_batch = 4 * n;
    Trainer trainer(testing::plan_for(config, context), context);
    for (int step = 0; step < 2; ++step) trainer.step(testing::tiny_gpt_batch(step, config));
    const int before = relayout_segments();
    world->barrier();
    StateExchange used = StateExchange::kSend;
    const FullModelState shared = gather_full_state(
        context, config, 2, trainer.checkpoint_contents(), StateExchange::kShareOnOneNode, &used);
    CHECK(used == StateExchange::kShareOnOneNode);  // one machine: the shared way was taken
    const FullModelState sent =
        gather_full_state(context, config, 2, trainer.checkpoint_contents(), StateExchange::kSend);
    REQUIRE(shared.tensors.size() == sent.tensors.size());
    for (const auto& [name, tensor] : sent.tensors) {
      INFO(name);
      REQUIRE(shared.tensors.count(name) == 1);
      CHECK(shared.tensors.at(name).equal(tensor));
    }
    // This rank's own parameters are in it as they are.
    for (const auto& [name, tensor] : materialize(trainer.checkpoint_contents())) {
      if (name.rfind("rng/", 0) == 0) continue;  // dropout streams are not gathered
      INFO(name);
      const auto it = shared.tensors.find(name.substr(name.find('/') + 1));  // "c0/..." -> full
      REQUIRE(it != shared.tensors.end());
      CHECK(it->second.equal(tensor));
    }
    world->barrier();
    CHECK(relayout_segments() <= before);
  }
}
