// Threads per rank from the launcher (job/thread_choice.h): each rule in its order, and the
// oversubscription warning.
#include <catch2/catch.hpp>

#include "job/thread_choice.h"

using Catch::Contains;
using namespace triax;

namespace {

LaunchEnv ranks_on_node(int n) {
  LaunchEnv launch;
  launch.local_world_size = n;
  return launch;
}

}  // namespace

TEST_CASE("threads per rank follow the launcher, in order", "[threads]") {
  Config c;
  // Nothing said: the node's CPUs shared by its ranks.
  ThreadChoice t = choose_threads(c, ranks_on_node(4), {}, 16, 16);
  CHECK(t.threads == 4);
  CHECK_THAT(t.source, Contains("16 CPUs / 4 rank(s)"));
  CHECK_FALSE(t.oversubscribed);
  // Bound by the launcher to 2 CPUs.
  t = choose_threads(c, ranks_on_node(4), {}, 16, 2);
  CHECK(t.threads == 2);
  CHECK_THAT(t.source, Contains("bound to"));
  // Slurm's --cpus-per-task beats the mask; OMP_NUM_THREADS beats Slurm; the YAML beats all.
  t = choose_threads(c, ranks_on_node(4), {{"SLURM_CPUS_PER_TASK", "3"}}, 16, 2);
  CHECK(t.threads == 3);
  t = choose_threads(c, ranks_on_node(4), {{"SLURM_CPUS_PER_TASK", "3"}, {"OMP_NUM_THREADS", "1"}},
                     16, 16);
  CHECK(t.threads == 1);
  CHECK(t.source == "OMP_NUM_THREADS");
  c.train.threads = 5;
  t = choose_threads(c, ranks_on_node(2), {{"OMP_NUM_THREADS", "1"}}, 16, 16);
  CHECK(t.threads == 5);
  CHECK(t.source == "train.threads");
}

TEST_CASE("more ranks x threads than CPUs is warned about", "[threads]") {
  Config c;
  const ThreadChoice eight_on_two = choose_threads(c, ranks_on_node(8), {}, 2, 2);
  CHECK(eight_on_two.threads == 1);
  CHECK(eight_on_two.oversubscribed);
  CHECK_THAT(eight_on_two.warning, Contains("8 ranks x 1 thread(s) = 8 > 2 CPUs"));
  c.train.threads = 2;
  CHECK(choose_threads(c, ranks_on_node(2), {}, 2, 2).oversubscribed);
  CHECK_FALSE(choose_threads(c, ranks_on_node(1), {}, 2, 2).oversubscribed);
}
