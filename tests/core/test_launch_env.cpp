#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/launch_env.h"

using triax::detect_launch;
using triax::EnvMap;
using triax::Launcher;

TEST_CASE("a plain process is rank 0 of 1", "[launch]") {
  const auto launch = detect_launch(EnvMap{{"HOME", "/root"}, {"PATH", "/usr/bin"}});
  CHECK(launch.launcher == Launcher::kSingle);
  CHECK(launch.rank == 0);
  CHECK(launch.world_size == 1);
  CHECK(launch.local_rank == 0);
  CHECK(launch.local_world_size == 1);
}

TEST_CASE("mpirun (hydra) is read from PMI_* and MPI_LOCAL*", "[launch]") {
  const auto launch = detect_launch(EnvMap{{"PMI_RANK", "2"},
                                           {"PMI_SIZE", "4"},
                                           {"PMI_FD", "6"},
                                           {"MPI_LOCALRANKID", "2"},
                                           {"MPI_LOCALNRANKS", "4"},
                                           {"HYDI_CONTROL_FD", "7"}});
  CHECK(launch.launcher == Launcher::kHydra);
  CHECK(launch.rank == 2);
  CHECK(launch.world_size == 4);
  CHECK(launch.local_rank == 2);
  CHECK(launch.local_world_size == 4);
  CHECK(launch.describe() == "mpirun rank 2 of 4 (local 2 of 4)");
}

TEST_CASE("mpiexec inside salloc/sbatch is hydra, not Slurm rank 0", "[launch]") {
  // Every mpiexec rank inherits the batch script's SLURM_PROCID=0 and SLURM_NTASKS.
  const auto launch = detect_launch(EnvMap{{"SLURM_JOB_ID", "17"},
                                           {"SLURM_PROCID", "0"},
                                           {"SLURM_NTASKS", "4"},
                                           {"SLURM_STEP_ID", "0"},
                                           {"PMI_RANK", "3"},
                                           {"PMI_SIZE", "4"},
                                           {"MPI_LOCALRANKID", "3"},
                                           {"MPI_LOCALNRANKS", "4"}});
  CHECK(launch.launcher == Launcher::kHydra);
  CHECK(launch.rank == 3);
  CHECK(launch.world_size == 4);
}

TEST_CASE("an srun job step is read from SLURM_*", "[launch]") {
  const auto launch = detect_launch(EnvMap{{"SLURM_JOB_ID", "17"},
                                           {"SLURM_STEP_ID", "0"},
                                           {"SLURM_PROCID", "5"},
                                           {"SLURM_NTASKS", "8"},
                                           {"SLURM_LOCALID", "1"},
                                           {"SLURM_NODEID", "2"},
                                           {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"},
                                           {"PMI_RANK", "5"},
                                           {"PMI_SIZE", "8"},
                                           {"PMI_FD", "9"}});
  CHECK(launch.launcher == Launcher::kSrun);
  CHECK(launch.rank == 5);
  CHECK(launch.world_size == 8);
  CHECK(launch.local_rank == 1);
  CHECK(launch.local_world_size == 2);  // node 2 is within "2(x3)"
  CHECK(launch.node_index == 2);        // tells nodes apart beside the hostname
}

TEST_CASE("the last node of a compressed Slurm task list", "[launch]") {
  const auto launch = detect_launch(EnvMap{{"SLURM_STEP_ID", "3"},
                                           {"SLURM_PROCID", "6"},
                                           {"SLURM_NTASKS", "7"},
                                           {"SLURM_LOCALID", "0"},
                                           {"SLURM_NODEID", "3"},
                                           {"SLURM_TASKS_PER_NODE", "2(x3),1"}});
  CHECK(launch.local_world_size == 1);
}

TEST_CASE("an sbatch batch script is one process, not rank 0 of N", "[launch]") {
  const auto launch =
      detect_launch(EnvMap{{"SLURM_JOB_ID", "17"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}});
  CHECK(launch.launcher == Launcher::kSingle);
  CHECK(launch.world_size == 1);
}

TEST_CASE("torchrun is read from RANK/WORLD_SIZE/LOCAL_* and its rendezvous", "[launch]") {
  const auto launch = detect_launch(EnvMap{{"RANK", "3"},
                                           {"WORLD_SIZE", "4"},
                                           {"LOCAL_RANK", "1"},
                                           {"LOCAL_WORLD_SIZE", "2"},
                                           {"MASTER_ADDR", "127.0.0.1"},
                                           {"MASTER_PORT", "29500"},
                                           {"GROUP_RANK", "1"},
                                           {"TORCHELASTIC_RUN_ID", "none"},
                                           {"TORCHELASTIC_RESTART_COUNT", "0"},
                                           {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  CHECK(launch.launcher == Launcher::kTorchrun);
  CHECK(launch.rank == 3);
  CHECK(launch.world_size == 4);
  CHECK(launch.local_rank == 1);
  CHECK(launch.local_world_size == 2);
  CHECK(launch.master_addr == "127.0.0.1");
  CHECK(launch.master_port == 29500);
  CHECK(launch.node_index == 1);  // torchrun's GROUP_RANK is the node's index
}

TEST_CASE("hand-set RANK and WORLD_SIZE", "[launch]") {
  const auto launch = detect_launch(EnvMap{{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  CHECK(launch.launcher == Launcher::kEnv);
  CHECK(launch.rank == 1);
  CHECK(launch.world_size == 2);
  CHECK(launch.local_rank == 1);
  CHECK(launch.local_world_size == 2);
  CHECK(launch.node_index == -1);  // nodes told apart by hostname only
}

TEST_CASE("malformed launcher variables are named in the error", "[launch]") {
  CHECK_THROWS_WITH(detect_launch(EnvMap{{"RANK", "x"}, {"WORLD_SIZE", "2"}}),
                    Catch::Contains("RANK='x'"));
  CHECK_THROWS_WITH(detect_launch(EnvMap{{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
                    Catch::Contains("RANK=2 is not below WORLD_SIZE=2"));
  CHECK_THROWS_AS(detect_launch(EnvMap{{"MPI_LOCALRANKID", "0"}, {"PMI_SIZE", "0"}}),
                  triax::ConfigError);
}
