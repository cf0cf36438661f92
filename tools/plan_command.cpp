#include "tools/plan_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "checkpoint/location.h"
#include "checkpoint/manifest.h"
#include "checkpoint/resume.h"
#include "core/error.h"
#include "core/log.h"
#include "core/run_paths.h"
#include "job/job_start.h"
#include "job/rank_table.h"
#include "parallel/comm/gather_text.h"
#include "parallel/comm/world.h"
#include "parallel/node_topology.h"
#include "plan/calibrate.h"
#include "plan/dry_run.h"
#include "plan/planner.h"

namespace triax {
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
    constraints.placement = placement_shape(manifest.config.schedule.name);
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
  JobSteps steps;
  steps.prepare = [&](const LaunchEnv& /*launch*/) {
    Config config = load_config(args.config_path, args.overrides);
    check_calibration(config);
    return config;
  };
  steps.run = [&](World& world, const JobStart& start, const ThreadChoice& /*threads*/,
                  RankTable& /*ranks*/) {
    const Config& config = start.config;
    const std::string out = !args.out.empty()        ? args.out
                            : config.run.dir.empty() ? std::string("profile.yaml")
                                                     : RunPaths(config.run.dir).profile();
    Communicator& comm = *world.communicator();
    const std::vector<std::string> keys =
        all_gather_text(comm, local_node_key(start.launch.node_index));
    const NodeTopology nodes(keys);
    const auto begin = std::chrono::steady_clock::now();
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
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(),
          args.config_path.c_str(), out.c_str());
    }
    comm.barrier();
  };
  return run_job(steps, argc, argv);
}

}  // namespace triax
