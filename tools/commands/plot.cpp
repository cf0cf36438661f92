// `triax plot RUN_DIR`: the loss curves (tools/plot_metrics.py).
#include "tools/commands/command.h"

#include <unistd.h>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "core/run_paths.h"
#include "core/strings.h"
#include "tools/version.h"

namespace triax {

int run_plot(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
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

}  // namespace triax
