// `triax flight RUN_DIR`: the analysis of every rank's flight record (tools/flight_report.py).
#include "tools/commands/command.h"

#include <unistd.h>
#include <cstdio>

#include "core/error.h"
#include "core/strings.h"
#include "tools/version.h"

namespace triax {

int run_flight(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
  const std::string script = std::string(kTriaxSourceDir) + "/tools/flight_report.py";
  std::fflush(stdout);
  ::execl("/usr/bin/python3", "python3", script.c_str(), args.inputs[0].c_str(),
          static_cast<char*>(nullptr));
  throw Error(str("cannot run /usr/bin/python3 ", script, " (apt-get install python3)"));
}

}  // namespace triax
