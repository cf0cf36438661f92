// `triax plan CONFIG --world N`: every layout ranked, or a dry run of one rank.
#include "tools/commands/command.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.h"
#include "core/strings.h"
#include "plan/device_compute.h"
#include "plan/dry_run.h"
#include "plan/explain.h"
#include "plan/gpu_model.h"
#include "plan/planner.h"
#include "plan/profile.h"
#include "tools/auto_layout.h"

namespace triax {

int run_plan(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
  const Config config = load_config(args.config_path, args.overrides);
  if (!args.device.empty() && !args.profile.empty()) {
    throw ConfigError(
        "--device and --profile both given: a plan uses one machine's figures (valid: --device "
        "for a GPU from its datasheet, --profile for what `triax calibrate` measured here)");
  }
  if (args.gpus_per_node > 0 && args.device.empty()) {
    throw ConfigError("--gpus-per-node is for --device (valid: --device NAME --gpus-per-node G)");
  }
  std::optional<GpuModel> device;
  int nodes = args.nodes;
  if (!args.device.empty()) {
    device = find_gpu(args.device);
    if (args.gpus_per_node > 0) device->gpus_per_node = args.gpus_per_node;
    if (args.gpus_per_node > 0 && args.nodes_given &&
        args.world != args.gpus_per_node * args.nodes) {
      throw ConfigError(str("--gpus-per-node ", args.gpus_per_node, " x --nodes ", args.nodes,
                            " is not --world ", args.world, " (valid: one of them, or both with ",
                            "their product the world)"));
    }
    const int per_node = device->gpus_per_node;
    if (!args.nodes_given) {
      if (args.world > per_node && args.world % per_node != 0) {
        throw ConfigError(str("--world ", args.world, ": not a whole number of ", device->name,
                              " nodes of ", per_node, " GPUs (--gpus-per-node ", per_node,
                              "; valid: a multiple of ", per_node, ", or --nodes K)"));
      }
      nodes = args.world > per_node ? args.world / per_node : 1;
    }
    if (args.world % nodes == 0) device->gpus_per_node = args.world / nodes;
  }
  if (args.world % nodes != 0) {
    throw ConfigError(str("--nodes ", nodes, ": does not divide --world ", args.world,
                          " (valid: a divisor of ", args.world, ")"));
  }
  const Profile profile = device                 ? device_profile(config, *device)
                          : args.profile.empty() ? nominal_profile(config)
                                                 : Profile::read(args.profile);
  if (args.rank >= 0) {
    const Config chosen =
        config.parallel.automatic ? resolve_auto_layout(config, args.world, nodes, "") : config;
    std::fputs(dry_run(chosen, args.world, nodes, args.rank, args.groups, profile).c_str(), stdout);
    return 0;
  }
  PlanRequest request;
  request.world = args.world;
  request.nodes = nodes;
  request.memory_per_rank = args.memory_per_rank;
  if (device && args.memory_per_rank == 0) {
    // The device's memory; the process's reserve counts against it (Profile::base_bytes).
    request.memory_per_rank = device->memory_bytes;
    request.memory_source = str(device->name, "'s memory, ", fixed(mib(device->reserve()), 0),
                                " MiB of it reserved for the process");
  }
  LayoutPlan plan = plan_layouts(config, request, profile);
  if (device && config.train.precision == Precision::kFp32) {
    plan.notes.push_back(str("train.precision is fp32: times and MFU are at ", device->name,
                             "'s fp32 peak (", std::lround(device->fp32_flops / 1e12),
                             " TFLOP/s); --set train.precision=bf16 plans bf16 training (",
                             std::lround(device->bf16_flops / 1e12), " TFLOP/s)"));
  }
  if (args.explain > 0) {
    std::fputs(
        explain_row(config, request, plan, args.explain, profile, device ? &*device : nullptr)
            .c_str(),
        stdout);
    return 0;
  }
  if (args.csv) {
    std::fputs(plan.csv().c_str(), stdout);
    return 0;
  }
  std::fputs(plan.table(config, request, args.top).c_str(), stdout);
  std::fputs(plan.recommendation(args.config_path).c_str(), stdout);
  return 0;
}

}  // namespace triax
