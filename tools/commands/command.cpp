#include "tools/commands/command.h"

#include <torch/version.h>
#include <cstdio>
#include <vector>

#include "tools/version.h"

namespace triax {
namespace {

int run_help(const CliArgs& /*args*/, int* /*argc*/, char*** /*argv*/) {
  std::fputs(usage().c_str(), stdout);
  return 0;
}

int run_version(const CliArgs& /*args*/, int* /*argc*/, char*** /*argv*/) {
  std::printf("triax %s (LibTorch %s)\n", kTriaxVersion, TORCH_VERSION);
  return 0;
}

}  // namespace

const CommandRun* find_command_run(const std::string& name) {
  static const std::vector<CommandRun> runs = {
      {"train", run_train, true},
      {"config", run_config, false},
      {"prepare-data", run_prepare_data, false},
      {"tokenizer", run_tokenizer, false},
      {"generate", run_generate, false},
      {"plot", run_plot, false},
      {"flight", run_flight, false},
      {"reshard", run_convert, false},
      {"export", run_convert, false},
      {"import", run_convert, false},
      {"calibrate", run_calibrate, true},
      {"plan", run_plan, false},
      {"version", run_version, false},
      {"help", run_help, false},
  };
  for (const CommandRun& run : runs) {
    if (name == run.name) return &run;
  }
  return nullptr;
}

}  // namespace triax
