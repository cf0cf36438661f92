// The `triax` executable: subcommand dispatch and the process's error policy.
//
// Error policy: everything that can be checked without communication (launch variables, the
// YAML, the layout, the batch arithmetic, the data files) is checked first, identically on every
// rank, so a mistake prints one clear message per rank and exits 2 before any communicator
// exists — no hang, no stack trace. After the world is up, an error on one rank ends the job
// on every rank (job/failure_policy.h), because its peers may be blocked in a collective it will
// never join.
#include <string>
#include <vector>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/heap_reuse.h"
#include "core/log.h"
#include "job/job_start.h"
#include "job/stop_signal.h"
#include "tools/cli_args.h"
#include "tools/commands/command.h"

int main(int argc, char** argv) {
  using namespace triax;
  // At once: a SIGTERM/SIGUSR1 during start-up is honoured after the first step, not fatal.
  install_stop_signals();
  flight::install_dump_signal();
  CliArgs args;
  try {
    args = parse_cli_args(std::vector<std::string>(argv + 1, argv + argc));
    const CommandRun* command = find_command_run(args.command);
    TRIAX_CHECK(command != nullptr, "no tools/commands/ file runs '", args.command, "'");
    if (command->reuse_freed_heap) reuse_freed_heap();
    return command->run(args, &argc, &argv);
  } catch (const ConfigError& e) {
    log::error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log::error(e.what());
    return kExitFailure;
  }
}
