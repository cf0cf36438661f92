// defines: triax::CliArgs, triax::parse_cli_args
//
// The command line of `triax SUBCOMMAND CONFIG [--set key=value ...] [--world N]`.
// Kept apart from main so that it can be tested, and so that every mistake names the argument.
#pragma once

#include <string>
#include <vector>

namespace triax {

struct CliArgs {
  std::string command;                 ///< train, config, help, version
  std::string config_path;             ///< the YAML file
  std::vector<std::string> overrides;  ///< --set key=value, in order
  int world = 0;                       ///< --world N (config): layout for N ranks; 0 = launch's
  bool describe = false;               ///< --describe (config): list every key
};

/// Throws ConfigError (with a "did you mean") on an unknown subcommand or option.
CliArgs parse_cli_args(const std::vector<std::string>& argv);

/// The text of `triax --help`.
std::string usage();

}  // namespace triax
