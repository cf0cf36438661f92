#include <catch2/catch.hpp>

#include "parallel/comm/mpi_runtime.h"

using Catch::Contains;
using triax::LaunchEnv;
using triax::Launcher;

namespace {
LaunchEnv launched_by(Launcher launcher, int rank, int world) {
  LaunchEnv launch;
  launch.launcher = launcher;
  launch.rank = rank;
  launch.world_size = world;
  return launch;
}
}  // namespace

TEST_CASE("a world MPI agrees with is fine", "[launch]") {
  CHECK(triax::launch_mismatch(launched_by(Launcher::kHydra, 2, 4), 2, 4).empty());
  CHECK(triax::launch_mismatch(launched_by(Launcher::kSingle, 0, 1), 0, 1).empty());
}

TEST_CASE("torchrun with MPICH's one-rank worlds says how to launch", "[launch]") {
  CHECK_THAT(triax::launch_mismatch(launched_by(Launcher::kTorchrun, 3, 4), 0, 1),
             Contains("torchrun") && Contains("world of 1") && Contains("mpirun -np 4"));
}

TEST_CASE("srun without PMI2 says --mpi=pmi2", "[launch]") {
  CHECK_THAT(triax::launch_mismatch(launched_by(Launcher::kSrun, 1, 2), 0, 1),
             Contains("srun --mpi=pmi2"));
}

TEST_CASE("hand-set RANK/WORLD_SIZE without an MPI launcher", "[launch]") {
  CHECK_THAT(triax::launch_mismatch(launched_by(Launcher::kEnv, 0, 2), 0, 1),
             Contains("unset RANK and WORLD_SIZE"));
}
