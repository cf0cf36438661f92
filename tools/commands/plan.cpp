// `triax plan CONFIG --world N`: every layout ranked, or a dry run of one rank.
#include "tools/commands/command.h"

#include <cstdio>

#include "core/error.h"
#include "core/strings.h"
#include "plan/dry_run.h"
#include "plan/planner.h"
#include "plan/profile.h"
#include "tools/auto_layout.h"

namespace triax {

int run_plan(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
  const Config config = load_config(args.config_path, args.overrides);
  if (args.world % args.nodes != 0) {
    throw ConfigError(str("--nodes ", args.nodes, ": does not divide --world ", args.world,
                          " (valid: a divisor of ", args.world, ")"));
  }
  const Profile profile =
      args.profile.empty() ? nominal_profile(config) : Profile::read(args.profile);
  if (args.rank >= 0) {
    const Config chosen = config.parallel.automatic
                              ? resolve_auto_layout(config, args.world, args.nodes, "")
                              : config;
    std::fputs(dry_run(chosen, args.world, args.nodes, args.rank, args.groups, profile).c_str(),
               stdout);
    return 0;
  }
  PlanRequest request;
  request.world = args.world;
  request.nodes = args.nodes;
  request.memory_per_rank = args.memory_per_rank;
  const LayoutPlan plan = plan_layouts(config, request, profile);
  if (args.csv) {
    std::fputs(plan.csv().c_str(), stdout);
    return 0;
  }
  std::fputs(plan.table(config, request, args.top).c_str(), stdout);
  std::fputs(plan.recommendation(args.config_path).c_str(), stdout);
  return 0;
}

}  // namespace triax
