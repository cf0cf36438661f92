// `triax config CONFIG [--world N]` and `triax config --describe`.
#include "tools/commands/command.h"

#include <cstdio>

#include "core/config.h"
#include "tools/auto_layout.h"
#include "train/run_plan.h"

namespace triax {

int run_config(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
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

}  // namespace triax
