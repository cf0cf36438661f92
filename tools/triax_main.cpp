// The `triax` executable: subcommand dispatch and the process's error policy.
//
// Error policy: everything that can be checked without communication (launch variables, the
// YAML, the layout, the batch arithmetic, the data files) is checked first, identically on every
// rank, so a mistake prints one clear message per rank and exits 2 before any communicator
// exists — no hang, no stack trace. After the world is up, an error on one rank ends the job
// (World::abort), because its peers may be blocked in a collective it will never join.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "checkpoint/convert.h"
#include "checkpoint/location.h"
#include "checkpoint/resume.h"
#include "core/config.h"
#include "core/death_watch.h"
#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/launch_env.h"
#include "core/log.h"
#include "data/prepare_data.h"
#include "parallel/comm/gather_text.h"
#include "parallel/comm/world.h"
#include "parallel/parallel_context.h"
#include "tools/cli_args.h"
#include "tools/version.h"
#include "train/gpt_training.h"
#include "train/mlp_trainer.h"
#include "train/output_check.h"
#include "train/run_plan.h"
#include "train/stop_signal.h"
#include "train/thread_choice.h"

namespace triax {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

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
    std::fputs(plan_run(config, args.world, DataCheck::kIfPresent).describe().c_str(), stdout);
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

// `triax flight RUN_DIR`: the analysis of every rank's flight record (tools/flight_report.py).
int run_flight(const CliArgs& args) {
  const std::string script = std::string(kTriaxSourceDir) + "/tools/flight_report.py";
  std::fflush(stdout);
  ::execl("/usr/bin/python3", "python3", script.c_str(), args.inputs[0].c_str(),
          static_cast<char*>(nullptr));
  throw Error(str("cannot run /usr/bin/python3 ", script, " (apt-get install python3)"));
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
  const Manifest manifest = open_checkpoint(source, source);
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

// The job itself, on a world that is up: the one place that switches on the model.
void train(const RunPlan& plan, ParallelContext& context, const LaunchEnv& launch,
           const std::optional<Manifest>& checkpoint) {
  switch (plan.model) {
    case ModelKind::kGpt: {
      GptTraining training(plan, context, kProcessStart, launch.local_rank == 0);
      if (checkpoint) training.resume_from(*checkpoint);
      training.run();
      break;
    }
    case ModelKind::kMlp:
      MlpTrainer(plan, context).train();
      break;
  }
}

void write_resolved_config(const Config& config, const ParallelContext& context) {
  if (config.run.dir.empty() || context.rank() != 0) return;
  std::filesystem::create_directories(config.run.dir);
  const std::string path = config.run.dir + "/config.resolved.yaml";
  std::ofstream file(path);
  file << to_yaml(config);
  check_written(file, path, "the resolved configuration (run.dir)");
  log::info(str("resolved configuration written to ", path));
}

// Ends the job after an error on this rank: the message first (flushed, so the abort cannot
// outrun it), then this rank's flight record; after a timeout the peers waiting on the same
// stuck rank time out within moments, so they are given a grace period to report too, and
// rank 0 prints every rank's last action from their records.
// "rank host pid" of every rank, gathered at start (write_rank_table).
std::vector<std::string> g_rank_table;

// Under torchrun a stopped rank ignores the agent's SIGTERM and holds the job for the agent's
// 30 s kill delay; a rank that timed out waiting for it ends it instead (same host only), once
// the grace period shows it wrote no flight record.
void kill_silent_local_ranks(int rank) {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  for (const std::string& line : g_rank_table) {
    std::istringstream fields(line);
    int r = -1;
    std::string where;
    long pid = 0;
    fields >> r >> where >> pid;
    if (r == rank || where != host || pid <= 0) continue;
    if (std::filesystem::exists(flight::dump_path(r))) continue;
    if (::kill(static_cast<pid_t>(pid), SIGKILL) == 0) {
      log::error(str("rank ", r, " (pid ", pid, ") did not answer within comm.timeout_s and ",
                     "wrote no flight record: killed it so that the job ends"));
    }
  }
}

// A connection error names the peer by address ("[10.0.0.2]:41234"); the user thinks in ranks
// and nodes. Resolves the address to a host name and lists the ranks that ran there, so a lost
// node reads as one: "ranks 4,5,6,7 ran on n2".
std::string peer_ranks_note(const std::string& message) {
  static const std::regex kAddress(R"(\[(\d+\.\d+\.\d+\.\d+)\]:\d+)");
  std::smatch match;
  if (!std::regex_search(message, match, kAddress)) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (::inet_pton(AF_INET, match[1].str().c_str(), &address.sin_addr) != 1) return "";
  char host[256] = {0};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&address), sizeof(address), host, sizeof(host),
                    nullptr, 0, NI_NAMEREQD) != 0) {
    return "";
  }
  const std::string name(host);
  std::vector<int> ranks;
  for (const std::string& line : g_rank_table) {
    std::istringstream fields(line);
    int r = -1;
    std::string where;
    fields >> r >> where;
    if (r >= 0 && (where == name || where == name.substr(0, name.find('.')))) ranks.push_back(r);
  }
  if (ranks.empty()) return "";
  return str("the lost connection was to ", match[1].str(), " = host ", name, ", where rank",
             ranks.size() > 1 ? "s " : " ", join(ranks, ","),
             " ran; if all of them ended at once, that node was lost");
}

[[noreturn]] void fail(const World& world, const std::exception& e, int code, int rank,
                       int world_size) {
  death_watch_done();  // this rank reports its own end
  log::error(e.what());
  if (const std::string note = peer_ranks_note(e.what()); !note.empty()) log::error(note);
  const bool timeout = dynamic_cast<const TimeoutError*>(&e) != nullptr;
  std::string path;
  try {  // nothing may stop the abort: a full disk that failed the run fails this write too
    path = flight::dump(timeout ? "timeout" : str("error: ", e.what()));
    if (!path.empty()) {
      log::error(str("flight recorder written to ", path, "; all ranks': triax flight RUN_DIR"));
    }
  } catch (const std::exception& dump_error) {
    log::error(str("flight recorder not written: ", dump_error.what()));
  }
  if (timeout) {
    const double grace = std::clamp(Communicator::timeout() / 4, 1.0, 10.0);
    std::this_thread::sleep_for(std::chrono::duration<double>(rank == 0 ? grace / 2 : grace));
    if (rank == 0 && !path.empty()) log::error(flight::summary(world_size));
    if (world.backend() == Backend::kTcp && !path.empty()) kill_silent_local_ranks(rank);
  }
  world.abort(code);
}

// run.dir/ranks.txt: "rank host pid" per line, so a process the launcher reports dead (by PID,
// e.g. mpirun's BAD TERMINATION box) is named as a rank; `triax flight` reads it too.
void write_rank_table(ParallelContext& context, const Config& config) {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  const std::vector<std::string> lines = all_gather_text(
      context.world(), str(context.rank(), " ", host, " ", static_cast<long>(::getpid()), "\n"));
  g_rank_table = lines;
  if (config.run.dir.empty() || context.rank() != 0) return;
  const std::string path = config.run.dir + "/ranks.txt";
  std::ofstream file(path);
  for (const std::string& line : lines) file << line;
  check_written(file, path, "the rank table (run.dir)");
}

// Where flight records go: run.dir/flight, cleared of an earlier run's records.
void prepare_flight_dir(const Config& config, int rank, int world_size) {
  flight::set_rank(rank, world_size);
  if (config.run.dir.empty()) return;
  const std::string dir = config.run.dir + "/flight";
  flight::set_dump_dir(dir);
  std::error_code ec;
  std::filesystem::remove(flight::dump_path(rank), ec);
  std::filesystem::remove(str(dir, "/ended/rank_", rank), ec);
  std::filesystem::remove(str(dir, "/ended/done_", rank), ec);
  if (rank == 0) std::filesystem::remove(dir + "/died.txt", ec);
  start_death_watch(rank, dir);
}

int run_train(const CliArgs& args, int* argc, char*** argv) {
  // 1. Everything that needs no communication, on every rank alike: the run's plan.
  LaunchEnv launch;
  std::optional<RunPlan> plan;
  Backend backend = Backend::kMpi;
  std::optional<Manifest> checkpoint;
  try {
    launch = detect_launch(process_env());
    log::set_prefix(str("[rank ", launch.rank, "]"));
    log::set_is_root(launch.rank == 0);  // pre-communication notes once, errors on every rank
    plan = plan_run(load_config(args.config_path, args.overrides), launch.world_size);
    if (!args.resume.empty() && plan->model != ModelKind::kGpt) {
      throw ConfigError("--resume: checkpoints are for model.arch: gpt (valid: no --resume)");
    }
    const std::string resume = resolve_resume_spec(args.resume, plan->config);
    if (!resume.empty()) checkpoint = read_checkpoint(resume, plan->config);
    backend = resolve_backend(plan->config.comm.backend, launch);
    check_outputs_writable(plan->config);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  }
  const Config& config = plan->config;
  Communicator::set_timeout(static_cast<double>(config.comm.timeout_s));
  prepare_flight_dir(config, launch.rank, launch.world_size);

  // 2. The world, and the check that it is the one the launcher announced.
  std::unique_ptr<World> world;
  try {
    world = std::make_unique<World>(backend, launch, static_cast<int>(config.comm.timeout_s), argc,
                                    argv);
    install_stop_signals();  // again: MPI's start-up may have installed its own handlers
    flight::install_dump_signal();
  } catch (const std::exception& e) {
    death_watch_done();
    log::error(e.what());
    return kExitUsage;
  }

  // 3. The job. From here on a failure on one rank must stop all of them.
  try {
    const ThreadChoice threads = choose_threads(
        config, launch, process_env(),
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), cpus_available());
    torch::set_num_threads(threads.threads);
    ParallelContext context(world->communicator(), plan->layout, local_node_key(launch.node_index),
                            config.ddp.hierarchical);
    log::set_prefix(context.prefix());
    log::set_is_root(context.rank() == 0);
    log::info(str("launch: ", launch.describe(), ", backend ", world->backend(), ", ",
                  torch::get_num_threads(), " compute thread(s) per rank (", threads.source, ")"));
    if (threads.oversubscribed && launch.local_rank == 0) log::warn(threads.warning);
    log::info(context.table() + context.dp_choice() + "\nresolved configuration:\n" +
              to_yaml(config));
    if (const std::string warning = context.tp_span_warning(); !warning.empty()) {
      log::warn(warning);
    }
    write_resolved_config(config, context);
    write_rank_table(context, config);
    train(*plan, context, launch, checkpoint);
    context.world().barrier();
    death_watch_done();
  } catch (const ConfigError& e) {
    fail(*world, e, kExitUsage, launch.rank, launch.world_size);
  } catch (const std::exception& e) {
    fail(*world, e, kExitFailure, launch.rank, launch.world_size);
  }
  return 0;
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
    if (args.command == "plot") return run_plot(args);
    if (args.command == "flight") return run_flight(args);
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
