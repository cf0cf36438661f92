// The `triax` executable: subcommand dispatch and the process's error policy.
//
// Error policy: everything that can be checked without communication (launch variables, the
// YAML, the layout, the batch arithmetic) is checked first, identically on every rank, so a
// mistake prints one clear message per rank and exits 2 before MPI exists — no hang, no stack
// trace. After MPI is up, an error on one rank aborts the job (MPI_Abort), because its peers may
// be blocked in a collective it will never join.
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/batch_plan.h"
#include "core/config.h"
#include "core/error.h"
#include "core/fashion_mnist.h"
#include "core/launch_env.h"
#include "core/log.h"
#include "models/gpt.h"
#include "parallel/mpi_communicator.h"
#include "parallel/mpi_runtime.h"
#include "parallel/parallel_context.h"
#include "tools/cli_args.h"
#include "tools/mlp_trainer.h"
#include "tools/pipeline_plan.h"
#include "tools/version.h"

namespace triax {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

// Model-specific layout rules (pure, so they run on every rank before communication).
void check_model_layout(const Config& config) {
  if (config.model.arch == "gpt") {
    check_gpt_layout(config);
  } else {
    check_mlp_layout(config);
  }
}

int compute_threads(const Config& config, const LaunchEnv& launch) {
  if (config.train.threads > 0) return static_cast<int>(config.train.threads);
  // Ranks on one node share its cores; more threads than cores only adds contention.
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, launch.local_world_size));
}

int run_config(const CliArgs& args) {
  if (args.describe) {
    std::fputs(describe_config_keys().c_str(), stdout);
    return 0;
  }
  const Config config = load_config(args.config_path, args.overrides);
  std::fputs(to_yaml(config).c_str(), stdout);
  if (args.world > 0) {
    const ParallelLayout layout = ParallelLayout::from_config(config.parallel, args.world);
    check_model_layout(config);
    const BatchPlan plan = BatchPlan::create(config.train, layout.dp_size());
    std::printf("\n%s%s\n", layout.table().c_str(), plan.describe().c_str());
    if (config.model.arch == "gpt") {
      std::printf(
          "%s", describe_schedule(config, schedule_from_config(config, layout.dp_size())).c_str());
    }
  }
  return 0;
}

int run_train(const CliArgs& args, int* argc, char*** argv) {
  // 1. Everything that needs no communication, on every rank alike.
  LaunchEnv launch;
  Config config;
  ParallelLayout layout = ParallelLayout::create(1, 1, 1);
  try {
    launch = detect_launch(process_env());
    log::set_prefix(str("[rank ", launch.rank, "]"));
    config = load_config(args.config_path, args.overrides);
    layout = ParallelLayout::from_config(config.parallel, launch.world_size);
    check_model_layout(config);
    if (config.model.arch == "gpt") schedule_from_config(config, layout.dp_size());
    if (config.model.arch != "mlp") {
      throw ConfigError(str("model.arch: '", config.model.arch,
                            "' cannot be trained by `triax "
                            "train` yet (valid: mlp); `triax config CONFIG --world N` validates "
                            "its layout"));
    }
    BatchPlan::create(config.train, layout.dp_size());
    check_fashion_mnist_files(config.data.dir);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  }

  // 2. MPI, and the check that it formed the world the launcher announced.
  MpiRuntime mpi(argc, argv);
  try {
    mpi.check_matches(launch);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  }

  // 3. The job. From here on a failure on one rank must stop all of them.
  try {
    torch::set_num_threads(compute_threads(config, launch));
    ParallelContext context(std::shared_ptr<Communicator>(MpiCommunicator::world()), layout);
    log::set_prefix(context.prefix());
    log::set_is_root(context.rank() == 0);
    log::info(str("launch: ", launch.describe(), ", ", torch::get_num_threads(),
                  " compute thread(s) per rank"));
    log::info(layout.table() + "resolved configuration:\n" + to_yaml(config));
    if (!config.run.dir.empty() && context.rank() == 0) {
      std::filesystem::create_directories(config.run.dir);
      const std::string path = config.run.dir + "/config.resolved.yaml";
      std::ofstream file(path);
      file << to_yaml(config);
      if (!file) throw Error(str(path, ": cannot write the resolved configuration (run.dir)"));
      log::info(str("resolved configuration written to ", path));
    }
    MlpTrainer trainer(config, context);
    trainer.train();
    context.world().barrier();
  } catch (const ConfigError& e) {
    log::error(e.what());
    MpiRuntime::abort(kExitUsage);
  } catch (const std::exception& e) {
    log::error(e.what());
    MpiRuntime::abort(kExitFailure);
  }
  return 0;
}

}  // namespace
}  // namespace triax

int main(int argc, char** argv) {
  using namespace triax;
  CliArgs args;
  try {
    args = parse_cli_args(std::vector<std::string>(argv + 1, argv + argc));
    if (args.command == "help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    if (args.command == "version") {
      std::printf("triax %s (LibTorch %s)\n", kTriaxVersion, TORCH_VERSION);
      return 0;
    }
    if (args.command == "config") return run_config(args);
    return run_train(args, &argc, &argv);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log::error(e.what());
    return kExitFailure;
  }
}
