// The `triax` executable: subcommand dispatch and the process's error policy.
//
// Error policy: everything that can be checked without communication (launch variables, the
// YAML, the layout, the batch arithmetic, the data files) is checked first, identically on every
// rank, so a mistake prints one clear message per rank and exits 2 before any communicator
// exists — no hang, no stack trace. After the world is up, an error on one rank ends the job
// (World::abort), because its peers may be blocked in a collective it will never join.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "core/batch_plan.h"
#include "core/config.h"
#include "core/error.h"
#include "core/fashion_mnist.h"
#include "core/launch_env.h"
#include "core/log.h"
#include "core/lr_schedule.h"
#include "models/gpt.h"
#include "parallel/parallel_context.h"
#include "parallel/world.h"
#include "tools/checkpoint.h"
#include "tools/checkpoint_convert.h"
#include "tools/cli_args.h"
#include "tools/gpt_training.h"
#include "tools/mlp_trainer.h"
#include "tools/pipeline_plan.h"
#include "tools/prepare_data.h"
#include "tools/stop_signal.h"
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

const auto kProcessStart = std::chrono::steady_clock::now();

int run_config(const CliArgs& args) {
  if (args.describe) {
    std::fputs((args.markdown ? describe_config_markdown() : describe_config_keys()).c_str(),
               stdout);
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

int run_prepare_data(const CliArgs& args) {
  const PreparedData data = prepare_text_data(args.inputs, args.out, args.val_fraction);
  // A folder like /usr/share/games/fortunes skips dozens of index files and links: name a few.
  constexpr size_t kShown = 3;
  for (size_t i = 0; i < std::min(kShown, data.skipped.size()); ++i) {
    std::printf("skipped %s\n", data.skipped[i].c_str());
  }
  if (data.skipped.size() > kShown) {
    std::printf("skipped %zu more non-text files or links\n", data.skipped.size() - kShown);
  }
  std::printf(
      "%lld text files -> %s/train.tok (%lld tokens), %s/val.tok (%lld tokens); "
      "byte-level, vocabulary 256\n",
      static_cast<long long>(data.files), args.out.c_str(),
      static_cast<long long>(data.train_tokens), args.out.c_str(),
      static_cast<long long>(data.val_tokens));
  return 0;
}

int run_plot(const CliArgs& args) {
  const std::string run_dir = args.inputs[0];
  if (!std::ifstream(run_dir + "/metrics.jsonl")) {
    throw ConfigError(str(run_dir,
                          "/metrics.jsonl: not found (valid: the run.dir of a training "
                          "run, which writes metrics.jsonl)"));
  }
  const std::string out = args.out.empty() ? run_dir + "/loss.png" : args.out;
  const std::string script = std::string(kTriaxSourceDir) + "/tools/plot_metrics.py";
  std::fflush(stdout);
  ::execl("/usr/bin/python3", "python3", script.c_str(), run_dir.c_str(), out.c_str(),
          static_cast<char*>(nullptr));
  throw Error(str("cannot run /usr/bin/python3 ", script, " (apt-get install python3-matplotlib)"));
}

int run_convert(const CliArgs& args) {
  const std::string& source = args.inputs[0];
  if (args.command == "import") {
    const FullModelState state = import_full_model(source);
    const std::string dir =
        write_sharded_checkpoint(state, args.tensor, args.pipeline, args.chunks, args.out);
    std::printf(
        "imported %s: %zu parameters -> %s (tp %d, pp %d); train from it with --resume %s\n",
        source.c_str(), state.tensors.size(), dir.c_str(), args.tensor, args.pipeline, dir.c_str());
    return 0;
  }
  const CheckpointManifest manifest = read_checkpoint_files(source, source);
  const FullModelState state = read_full_state(manifest);
  if (args.command == "export") {
    export_full_model(state, args.out);
    std::printf("exported %s (step %lld) -> %s\n", manifest.dir.c_str(),
                static_cast<long long>(state.step), args.out.c_str());
    return 0;
  }
  // Writing a step folder starts by removing it: it must not be the one we read from.
  const std::filesystem::path target =
      std::filesystem::weakly_canonical(std::filesystem::path(args.out) / step_folder(state.step));
  if (target == std::filesystem::weakly_canonical(manifest.dir)) {
    throw ConfigError(str("reshard --out ", args.out, ": would overwrite the source checkpoint ",
                          manifest.dir, " (valid: another folder)"));
  }
  const std::string dir =
      write_sharded_checkpoint(state, args.tensor, args.pipeline, args.chunks, args.out);
  std::printf("resharded %s (tp %lld, pp %lld) -> %s (tp %d, pp %d, %d chunk(s) per rank)\n",
              manifest.dir.c_str(), static_cast<long long>(manifest.tensor),
              static_cast<long long>(manifest.pipeline), dir.c_str(), args.tensor, args.pipeline,
              args.chunks);
  return 0;
}

int run_train(const CliArgs& args, int* argc, char*** argv) {
  // 1. Everything that needs no communication, on every rank alike.
  LaunchEnv launch;
  Config config;
  ParallelLayout layout = ParallelLayout::create(1, 1, 1);
  std::string backend;
  std::optional<CheckpointManifest> checkpoint;
  try {
    launch = detect_launch(process_env());
    log::set_prefix(str("[rank ", launch.rank, "]"));
    log::set_is_root(launch.rank == 0);  // pre-communication notes once, errors on every rank
    config = load_config(args.config_path, args.overrides);
    layout = ParallelLayout::from_config(config.parallel, launch.world_size);
    check_model_layout(config);
    BatchPlan::create(config.train, layout.dp_size());
    if (config.model.arch == "gpt") {
      schedule_from_config(config, layout.dp_size());
      plan_gpt_data(config);
      const std::string resume = resolve_resume_spec(args.resume, config);
      if (!resume.empty()) checkpoint = read_checkpoint(resume, config);
    } else {
      if (!args.resume.empty()) {
        throw ConfigError("--resume: checkpoints are for model.arch: gpt (valid: no --resume)");
      }
      check_fashion_mnist_files(config.data.dir);
      check_lr_schedule(config.train);
    }
    backend = resolve_backend(config.comm.backend, launch);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  }

  // 2. The world, and the check that it is the one the launcher announced.
  std::unique_ptr<World> world;
  try {
    world = std::make_unique<World>(backend, launch, static_cast<int>(config.comm.timeout_s), argc,
                                    argv);
  } catch (const std::exception& e) {
    log::error(e.what());
    return kExitUsage;
  }

  // 3. The job. From here on a failure on one rank must stop all of them.
  try {
    torch::set_num_threads(compute_threads(config, launch));
    ParallelContext context(world->communicator(), layout);
    log::set_prefix(context.prefix());
    log::set_is_root(context.rank() == 0);
    log::info(str("launch: ", launch.describe(), ", backend ", world->backend(), ", ",
                  torch::get_num_threads(), " compute thread(s) per rank"));
    log::info(layout.table() + "resolved configuration:\n" + to_yaml(config));
    if (!config.run.dir.empty() && context.rank() == 0) {
      std::filesystem::create_directories(config.run.dir);
      const std::string path = config.run.dir + "/config.resolved.yaml";
      std::ofstream file(path);
      file << to_yaml(config);
      if (!file) throw Error(str(path, ": cannot write the resolved configuration (run.dir)"));
      log::info(str("resolved configuration written to ", path));
    }
    if (config.model.arch == "gpt") {
      install_stop_signals();
      GptTraining training(config, context, kProcessStart, launch.local_rank == 0);
      if (checkpoint) training.resume_from(*checkpoint);
      training.run();
    } else {
      MlpTrainer(config, context).train();
    }
    context.world().barrier();
  } catch (const ConfigError& e) {
    log::error(e.what());
    world->abort(kExitUsage);
  } catch (const std::exception& e) {
    log::error(e.what());
    world->abort(kExitFailure);
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
    if (args.command == "prepare-data") return run_prepare_data(args);
    if (args.command == "plot") return run_plot(args);
    if (args.command == "reshard" || args.command == "export" || args.command == "import") {
      return run_convert(args);
    }
    return run_train(args, &argc, &argv);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log::error(e.what());
    return kExitFailure;
  }
}
