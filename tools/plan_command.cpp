#include "tools/plan_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "checkpoint/location.h"
#include "checkpoint/manifest.h"
#include "checkpoint/resume.h"
#include "core/bf16_matmul.h"
#include "core/error.h"
#include "core/log.h"
#include "core/run_paths.h"
#include "job/death_watch.h"
#include "job/failure_policy.h"
#include "job/rank_table.h"
#include "job/thread_choice.h"
#include "parallel/comm/gather_text.h"
#include "parallel/comm/world.h"
#include "parallel/node_topology.h"
#include "plan/calibrate.h"
#include "plan/dry_run.h"
#include "plan/planner.h"

namespace triax {
namespace {

constexpr int kExitUsageCode = 2;
constexpr int kExitFailureCode = 1;

}  // namespace

// Ranks per node as the launcher says (LOCAL_WORLD_SIZE, MPI_LOCALNRANKS, SLURM_NTASKS_PER_NODE):
// the planner's nodes. Every rank of a uniform job reads the same.
int launch_nodes(const LaunchEnv& launch) {
  const int per_node = std::max(1, launch.local_world_size);
  return launch.world_size % per_node == 0 ? launch.world_size / per_node : 1;
}

// `parallel: auto`: the planner's choice, from files and arithmetic only (the same on every
// rank). Resuming keeps the checkpoint's tp, pp and stage placement: they shape its shards.
Config resolve_auto_layout(const Config& config, int world, int nodes, const std::string& resume) {
  if (!config.parallel.automatic) return config;
  PlanConstraints constraints;
  const std::string spec = resolve_resume_spec(resume, config);
  if (!spec.empty()) {
    const Manifest manifest = open_checkpoint(spec, checkpoint_root(config));
    constraints.tp = static_cast<int>(manifest.tensor);
    constraints.pp = static_cast<int>(manifest.pipeline);
    constraints.chunks = static_cast<int>(manifest.chunks_per_rank);
    constraints.v_shape = manifest.config.schedule.name == ScheduleKind::kZbv ? 1 : 0;
    constraints.reason = str("tp ", manifest.tensor, ", pp ", manifest.pipeline, " and ",
                             manifest.chunks_per_rank, " chunk(s) per rank of the checkpoint ",
                             manifest.dir, " (another layout: triax reshard it first)");
  }
  const LayoutChoice choice = choose_layout(config, world, nodes, constraints);
  log::info(choice.message);
  return choice.config;
}

int run_plan(const CliArgs& args) {
  const Config config = load_config(args.config_path, args.overrides);
  if (args.world % args.nodes != 0) {
    throw ConfigError(str("--nodes ", args.nodes, ": does not divide --world ", args.world,
                          " (valid: a divisor of ", args.world, ")"));
  }
  const Profile profile =
      args.profile.empty() ? nominal_profile(config) : Profile::read(args.profile);
  if (args.rank >= 0) {
    const Config chosen = config.parallel.automatic
                              ? resolve_auto_layout(config, args.world, args.nodes, "")
                              : config;
    std::fputs(dry_run(chosen, args.world, args.nodes, args.rank, args.groups, profile).c_str(),
               stdout);
    return 0;
  }
  PlanRequest request;
  request.world = args.world;
  request.nodes = args.nodes;
  request.memory_per_rank = args.memory_per_rank;
  const LayoutPlan plan = plan_layouts(config, request, profile);
  if (args.csv) {
    std::fputs(plan.csv().c_str(), stdout);
    return 0;
  }
  std::fputs(plan.table(config, request, args.top).c_str(), stdout);
  std::fputs(plan.recommendation(args.config_path).c_str(), stdout);
  return 0;
}

// `triax calibrate CONFIG`: every rank measures (plan/calibrate.h); rank 0 writes the profile.
int run_calibrate(const CliArgs& args, int* argc, char*** argv) {
  LaunchEnv launch;
  Config config;
  Backend backend = Backend::kMpi;
  try {
    launch = detect_launch(process_env());
    log::set_prefix(str("[rank ", launch.rank, "]"));
    log::set_is_root(launch.rank == 0);
    config = load_config(args.config_path, args.overrides);
    check_calibration(config);
    backend = resolve_backend(config.comm.backend, launch);
    if (config.train.precision == Precision::kBf16) set_bf16_matmul(config.train.bf16_matmul);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsageCode;
  }
  const std::string out = !args.out.empty()        ? args.out
                          : config.run.dir.empty() ? std::string("profile.yaml")
                                                   : RunPaths(config.run.dir).profile();
  Communicator::set_timeout(static_cast<double>(config.comm.timeout_s));
  std::unique_ptr<World> world;
  try {
    world = std::make_unique<World>(backend, launch, static_cast<int>(config.comm.timeout_s), argc,
                                    argv);
  } catch (const std::exception& e) {
    death_watch_done();
    log::error(e.what());
    return kExitUsageCode;
  }
  try {
    const ThreadChoice threads = choose_threads(
        config, launch, process_env(),
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), cpus_available());
    torch::set_num_threads(threads.threads);
    Communicator& comm = *world->communicator();
    const std::vector<std::string> keys = all_gather_text(comm, local_node_key(launch.node_index));
    const NodeTopology nodes(keys);
    const auto start = std::chrono::steady_clock::now();
    const Profile profile = calibrate(config, comm, nodes);
    if (comm.rank() == 0) {
      if (const auto parent = std::filesystem::path(out).parent_path(); !parent.empty()) {
        std::filesystem::create_directories(parent);
      }
      profile.write(out);
      std::printf(
          "%s: %zu compute timings, %zu link fits, %s; %.1f s\nplan with: triax plan %s "
          "--world N --profile %s\n",
          out.c_str(), profile.compute.size(), profile.links.size(), profile.source.c_str(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          args.config_path.c_str(), out.c_str());
    }
    comm.barrier();
    death_watch_done();
  } catch (const ConfigError& e) {
    end_job_after_error(*world, e, kExitUsageCode, launch.rank, launch.world_size, RankTable());
  } catch (const std::exception& e) {
    end_job_after_error(*world, e, kExitFailureCode, launch.rank, launch.world_size, RankTable());
  }
  return 0;
}

}  // namespace triax
