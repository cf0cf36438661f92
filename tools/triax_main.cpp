// The `triax` executable: subcommand dispatch and the process's error policy.
//
// Error policy: everything that can be checked without communication (launch variables, the
// YAML, the layout, the batch arithmetic, the data files) is checked first, identically on every
// rank, so a mistake prints one clear message per rank and exits 2 before any communicator
// exists — no hang, no stack trace. After the world is up, an error on one rank ends the job
// on every rank (job/failure_policy.h), because its peers may be blocked in a collective it will
// never join.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "checkpoint/convert.h"
#include "checkpoint/location.h"
#include "checkpoint/resume.h"
#include "core/bf16_matmul.h"
#include "core/config.h"
#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/heap_reuse.h"
#include "core/launch_env.h"
#include "core/log.h"
#include "core/run_paths.h"
#include "data/prepare_data.h"
#include "interop/full_model_file.h"
#include "interop/hf_export.h"
#include "interop/hf_import.h"
#include "job/heartbeat.h"
#include "job/job_start.h"
#include "job/output_check.h"
#include "job/rank_table.h"
#include "job/run_dir_lock.h"
#include "job/run_outputs.h"
#include "job/stop_signal.h"
#include "parallel/comm/world.h"
#include "parallel/parallel_context.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli_args.h"
#include "tools/generate_command.h"
#include "tools/plan_command.h"
#include "tools/version.h"
#include "train/run_plan.h"
#include "train/training.h"

namespace triax {
namespace {

const auto kProcessStart = std::chrono::steady_clock::now();

int run_config(const CliArgs& args) {
  if (args.describe) {
    std::fputs((args.markdown ? describe_config_markdown() : describe_config_keys()).c_str(),
               stdout);
    return 0;
  }
  Config config = load_config(args.config_path, args.overrides);
  if (args.world > 0) config = resolve_auto_layout(config, args.world, 1, "");
  std::fputs(to_yaml(config).c_str(), stdout);
  if (args.world > 0) {
    std::fputs(plan_run(config, args.world, DataCheck::kIfPresent).describe().c_str(), stdout);
  }
  return 0;
}

int run_prepare_data(const CliArgs& args) {
  TokenizerOptions options;
  options.tiktoken_pattern = args.pattern;
  const std::unique_ptr<Tokenizer> tokenizer =
      load_tokenizer(args.tokenizer.empty() ? "bytes" : args.tokenizer, options);
  const int threads =
      args.threads > 0 ? args.threads : static_cast<int>(std::thread::hardware_concurrency());
  const PreparedData data =
      prepare_text_data(args.inputs, args.out, args.val_fraction, *tokenizer, threads);
  // A folder like /usr/share/games/fortunes skips dozens of index files and links: name a few.
  constexpr size_t kShown = 3;
  for (size_t i = 0; i < std::min(kShown, data.skipped.size()); ++i) {
    std::printf("skipped %s\n", data.skipped[i].c_str());
  }
  if (data.skipped.size() > kShown) {
    std::printf("skipped %zu more non-text files or links\n", data.skipped.size() - kShown);
  }
  const double tokens = static_cast<double>(data.train_tokens + data.val_tokens);
  std::printf(
      "%lld text files -> %s/train.tok (%lld tokens), %s/val.tok (%lld tokens); %s, "
      "vocabulary %lld; %.0f tokens/s on %d thread(s)\n",
      static_cast<long long>(data.files), args.out.c_str(),
      static_cast<long long>(data.train_tokens), args.out.c_str(),
      static_cast<long long>(data.val_tokens), tokenizer->describe().c_str(),
      static_cast<long long>(data.vocab), data.seconds > 0 ? tokens / data.seconds : 0.0, threads);
  if (!args.tokenizer.empty()) {
    std::printf("train with --set data.tokens=%s --set data.tokenizer=%s --set model.vocab=%lld\n",
                args.out.c_str(), args.tokenizer.c_str(), static_cast<long long>(data.vocab));
  }
  return 0;
}

// `triax tokenizer train|encode|decode`.
int run_tokenizer(const CliArgs& args) {
  const std::string& action = args.inputs[0];
  if (action == "train") {
    SentencePieceTraining training;
    training.inputs.assign(args.inputs.begin() + 1, args.inputs.end());
    training.out_prefix = args.out;
    training.vocab_size = args.vocab_size;
    training.model_type = args.model_type;
    const std::string model = train_sentencepiece(training);
    const auto trained = load_tokenizer(model);
    std::printf("trained %s; prepare data with --tokenizer %s\n", trained->describe().c_str(),
                model.c_str());
    return 0;
  }
  TokenizerOptions options;
  options.tiktoken_pattern = args.pattern;
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(args.inputs[1], options);
  std::string input;  // stdin, read with stdio (see tokenizer/sentencepiece_shim.cpp on iostreams)
  char buffer[1 << 16];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0;) input.append(buffer, n);
  if (action == "encode") {
    std::printf("%s\n", join(tokenizer->encode(input, true), " ").c_str());
    return 0;
  }
  std::vector<int32_t> ids;
  for (const std::string& word : split(input, ' ')) {
    if (word.find_first_not_of(" \n\t") != std::string::npos) ids.push_back(std::stoi(word));
  }
  const std::string text = tokenizer->decode(ids);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int run_plot(const CliArgs& args) {
  const std::string run_dir = args.inputs[0];
  const RunPaths paths(run_dir);
  if (!std::ifstream(paths.metrics())) {
    throw ConfigError(str(paths.metrics(),
                          ": not found (valid: the run.dir of a training run, which writes "
                          "metrics.jsonl)"));
  }
  const std::string out = args.out.empty() ? paths.loss_plot() : args.out;
  const std::string script = std::string(kTriaxSourceDir) + "/tools/plot_metrics.py";
  std::fflush(stdout);
  ::execl("/usr/bin/python3", "python3", script.c_str(), run_dir.c_str(), out.c_str(),
          static_cast<char*>(nullptr));
  throw Error(str("cannot run /usr/bin/python3 ", script, " (apt-get install python3-matplotlib)"));
}

// `triax flight RUN_DIR`: the analysis of every rank's flight record (tools/flight_report.py).
int run_flight(const CliArgs& args) {
  const std::string script = std::string(kTriaxSourceDir) + "/tools/flight_report.py";
  std::fflush(stdout);
  ::execl("/usr/bin/python3", "python3", script.c_str(), args.inputs[0].c_str(),
          static_cast<char*>(nullptr));
  throw Error(str("cannot run /usr/bin/python3 ", script, " (apt-get install python3)"));
}

int run_convert(const CliArgs& args) {
  return_freed_heap();  // a model streams through: hold only what is still in use
  const std::string& source = args.inputs[0];
  if (args.command == "import" && std::filesystem::is_directory(source)) {
    const Config base = args.base_config.empty() ? parse_config("{}", args.overrides, "--set")
                                                 : load_config(args.base_config, args.overrides);
    const HfImport imported =
        import_hf(source, base, args.tensor, args.pipeline, args.chunks, args.out);
    std::printf(
        "imported %s (%s, %lld tensors) -> %s (tp %d, pp %d)\n"
        "train it: mpirun -np N build/triax train %s --resume %s\n",
        source.c_str(), imported.hf.architecture.c_str(), static_cast<long long>(imported.tensors),
        imported.checkpoint_dir.c_str(), args.tensor, args.pipeline, imported.config_path.c_str(),
        args.out.c_str());
    return 0;
  }
  if (args.command == "import") {
    const FullModelState state = import_full_model(source);
    const std::string dir =
        write_sharded_checkpoint(state, args.tensor, args.pipeline, args.chunks, args.out);
    std::printf(
        "imported %s: %zu parameters -> %s (tp %d, pp %d); train from it with --resume %s\n",
        source.c_str(), state.tensors.size(), dir.c_str(), args.tensor, args.pipeline, dir.c_str());
    return 0;
  }
  const Manifest manifest = open_checkpoint(source, source);
  FullModelState state = read_full_state(manifest);
  if (args.command == "export" && args.hf) {
    const HfExport exported =
        export_hf(state, args.out, args.dtype, static_cast<int64_t>(args.max_shard_mb) << 20);
    std::printf("exported %s (step %lld) -> %s: %lld tensors, %d file(s), %.1f MiB %s\n",
                manifest.dir.c_str(), static_cast<long long>(state.step), args.out.c_str(),
                static_cast<long long>(exported.tensors), exported.files,
                static_cast<double>(exported.bytes) / (1 << 20), args.dtype.c_str());
    return 0;
  }
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
  if (!args.schedule.empty()) {
    parse_choice(args.schedule, &state.config.schedule.name);  // checked by the argument parser
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
  std::optional<RunPlan> plan;
  std::optional<Manifest> checkpoint;
  JobSteps steps;
  steps.prepare = [&](const LaunchEnv& launch) {
    plan = plan_run(resolve_auto_layout(load_config(args.config_path, args.overrides),
                                        launch.world_size, launch_nodes(launch), args.resume),
                    launch.world_size);
    const std::string resume = resolve_resume_spec(args.resume, plan->config);
    if (!resume.empty()) checkpoint = read_checkpoint(resume, plan->config);
    check_outputs_writable(plan->config);
    check_run_dir_free(RunPaths(plan->config.run.dir).lock());  // before anything is written
    return plan->config;
  };
  steps.before_world = [&](const JobStart& start) {
    prepare_flight_records(RunPaths(start.config.run.dir), start.launch.rank,
                           start.launch.world_size);
  };
  steps.run = [&](World& world, const JobStart& start, const ThreadChoice& threads,
                  RankTable& ranks) {
    const Config& config = plan->config;
    const LaunchEnv& launch = start.launch;
    const RunPaths paths(config.run.dir);
    ParallelContext context(world.communicator(), plan->layout, local_node_key(launch.node_index),
                            config.ddp.hierarchical);
    log::set_prefix(context.prefix());
    log::set_is_root(context.rank() == 0);
    log::info(str("launch: ", launch.describe(), ", backend ", world.backend(), ", ",
                  torch::get_num_threads(), " compute thread(s) per rank (", threads.source, ")"));
    if (threads.oversubscribed && launch.local_rank == 0) log::warn(threads.warning);
    if (config.train.precision == Precision::kBf16) log::info(bf16_choice().why);
    log::info(context.table() + context.dp_choice() + "\nresolved configuration:\n" +
              to_yaml(config));
    if (const std::string warning = context.tp_span_warning(); !warning.empty()) {
      log::warn(warning);
    }
    // Every rank tested the lock before the world formed; now rank 0 holds it to the end.
    const RunDirLock run_dir_lock = context.rank() == 0 ? RunDirLock(paths.lock()) : RunDirLock();
    write_resolved_config(config, paths, context.rank());
    ranks = gather_rank_table(context.world());
    if (paths.enabled() && context.rank() == 0) write_rank_table(ranks, paths.rank_table());
    Heartbeat heartbeat(context.world(), ranks, static_cast<double>(config.comm.heartbeat_s));
    Training training(*plan, context, kProcessStart, launch.local_rank == 0);
    if (checkpoint) training.resume_from(*checkpoint);
    training.run();
    // The goodbyes before the last barrier: ranks leave it together, and MPI_Finalize across
    // nodes (UCX over TCP) hangs when some ranks reach it seconds before the others.
    heartbeat.stop();
    context.world().barrier();
  };
  return run_job(steps, argc, argv);
}

}  // namespace
}  // namespace triax

int main(int argc, char** argv) {
  using namespace triax;
  // At once: a SIGTERM/SIGUSR1 during start-up is honoured after the first step, not fatal.
  install_stop_signals();
  flight::install_dump_signal();
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
    if (args.command == "tokenizer") return run_tokenizer(args);
    if (args.command == "generate") return run_generate(args);
    if (args.command == "plot") return run_plot(args);
    if (args.command == "flight") return run_flight(args);
    if (args.command == "plan") return run_plan(args);
    if (args.command == "calibrate") {
      reuse_freed_heap();  // as training does: the timings are of training's heap
      return run_calibrate(args, &argc, &argv);
    }
    if (args.command == "reshard" || args.command == "export" || args.command == "import") {
      return run_convert(args);
    }
    // Training re-allocates the same activations every step: keep freed heap for reuse (the
    // one-off commands above return it, so an import holds only what it still needs).
    reuse_freed_heap();
    return run_train(args, &argc, &argv);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log::error(e.what());
    return kExitFailure;
  }
}
