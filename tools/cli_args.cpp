#include "tools/cli_args.h"

#include <cstdlib>

#include "core/error.h"

namespace triax {
namespace {

const std::vector<std::string> kCommands = {"train", "config", "help", "version"};
const std::vector<std::string> kOptions = {"--set", "--world", "--describe", "--help"};

}  // namespace

std::string usage() {
  return "usage: triax COMMAND [ARGS]\n"
         "\n"
         "commands:\n"
         "  train CONFIG [--set key=value ...]   train the model CONFIG describes; launch it with\n"
         "                                        mpirun -np N (dp = N / (tensor * pipeline))\n"
         "  config CONFIG [--set key=value ...] [--world N]\n"
         "                                        validate CONFIG, print it resolved and, with\n"
         "                                        --world, the rank layout for N ranks\n"
         "  config --describe                     list every configuration key with its default\n"
         "  version                               print the version\n"
         "  help                                  print this help\n"
         "\n"
         "--set section.key=value overrides one YAML key (the value is YAML: --set "
         "model.mlp_hidden=[512,256]).\n"
         "Example: mpirun -np 4 build/triax train configs/mnist-mlp.yaml --set train.epochs=2\n";
}

CliArgs parse_cli_args(const std::vector<std::string>& argv) {
  CliArgs args;
  if (argv.empty() || argv[0] == "-h" || argv[0] == "--help") {
    args.command = "help";
    return args;
  }
  args.command = argv[0];
  if (std::find(kCommands.begin(), kCommands.end(), args.command) == kCommands.end()) {
    const std::string hint = closest(args.command, kCommands);
    throw ConfigError(str("unknown command '", args.command, "'",
                          hint.empty() ? "" : str(" (did you mean '", hint, "'?)"),
                          "; commands: ", join(kCommands, ", "), " (see triax --help)"));
  }
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    const auto value = [&](const std::string& option) -> std::string {
      if (i + 1 >= argv.size()) throw ConfigError(str(option, " needs a value"));
      return argv[++i];
    };
    if (arg == "--set") {
      args.overrides.push_back(value(arg));
    } else if (arg.rfind("--set=", 0) == 0) {
      args.overrides.push_back(arg.substr(6));
    } else if (arg == "--world") {
      const std::string text = value(arg);
      char* end = nullptr;
      const long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || n < 1 || n > (1 << 24)) {
        throw ConfigError(str("--world: '", text, "' is not a positive integer"));
      }
      args.world = static_cast<int>(n);
    } else if (arg == "--describe") {
      args.describe = true;
    } else if (arg == "--help" || arg == "-h") {
      args.command = "help";
    } else if (arg.rfind("-", 0) == 0) {
      const std::string hint = closest(arg, kOptions);
      throw ConfigError(str("unknown option '", arg, "'",
                            hint.empty() ? "" : str(" (did you mean '", hint, "'?)"),
                            " (see triax --help)"));
    } else if (args.config_path.empty()) {
      args.config_path = arg;
    } else {
      throw ConfigError(str("unexpected argument '", arg, "': ", args.command,
                            " takes one CONFIG file (did you forget --set?)"));
    }
  }
  const bool needs_config =
      (args.command == "train") || (args.command == "config" && !args.describe);
  if (needs_config && args.config_path.empty()) {
    throw ConfigError(str("triax ", args.command, " needs a CONFIG file, e.g. triax ", args.command,
                          " configs/mnist-mlp.yaml"));
  }
  return args;
}

}  // namespace triax
