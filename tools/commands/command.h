// defines: triax::CommandRun, triax::find_command_run, and each command's run
//
// The commands of `triax`, one file each in this folder (train.cpp, config.cpp, plan.cpp, ...);
// what arguments each takes and needs is declared in tools/cli_args.cpp. A command returns the
// process's exit code; it throws ConfigError for a usage mistake (exit 2), anything else for a
// failure (exit 1) — tools/triax_main.cpp prints it.
#pragma once

#include <string>

#include "tools/cli_args.h"

namespace triax {

using CommandFunction = int (*)(const CliArgs& args, int* argc, char*** argv);

struct CommandRun {
  const char* name;  ///< as the command line spells it
  CommandFunction run;
  /// Training and calibration re-allocate the same activations every step: freed heap is kept
  /// for reuse (the one-off commands return it, so an import holds only what it still needs).
  bool reuse_freed_heap;
};

/// The command `name` (one parse_cli_args accepted), or null.
const CommandRun* find_command_run(const std::string& name);

int run_train(const CliArgs& args, int* argc, char*** argv);
int run_config(const CliArgs& args, int* argc, char*** argv);
int run_prepare_data(const CliArgs& args, int* argc, char*** argv);
int run_tokenizer(const CliArgs& args, int* argc, char*** argv);
int run_generate(const CliArgs& args, int* argc, char*** argv);
int run_plot(const CliArgs& args, int* argc, char*** argv);
int run_flight(const CliArgs& args, int* argc, char*** argv);
/// reshard, export and import.
int run_convert(const CliArgs& args, int* argc, char*** argv);
int run_calibrate(const CliArgs& args, int* argc, char*** argv);
int run_plan(const CliArgs& args, int* argc, char*** argv);

}  // namespace triax
