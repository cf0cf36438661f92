// `triax calibrate CONFIG`: every rank measures (plan/calibrate.h); rank 0 writes the profile.
#include "tools/commands/command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/run_paths.h"
#include "job/job_start.h"
#include "parallel/comm/gather_text.h"
#include "parallel/node_topology.h"
#include "plan/calibrate.h"

namespace triax {

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
