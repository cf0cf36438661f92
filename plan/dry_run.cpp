#include "plan/dry_run.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "core/strings.h"
#include "models/model_spec.h"
#include "parallel/parallel_layout.h"
#include "plan/predict.h"
#include "train/run_plan.h"

namespace triax {
namespace {

std::string mib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buffer;
}

// The candidate the configuration itself describes.
Candidate configured(const RunPlan& plan) {
  const Config& c = plan.config;
  Candidate out;
  out.dp = plan.layout.dp_size(), out.tp = plan.layout.tp_size(), out.pp = plan.layout.pp_size();
  out.cp = plan.layout.cp_size();
  out.context_mode = c.parallel.context_mode;
  out.chunks = plan.schedule.chunks;
  out.schedule = c.schedule.name;
  out.micro_batch = plan.batch.micro_batch;
  out.microbatches = plan.batch.num_microbatches;
  out.recompute = c.train.recompute;
  out.shard = shard_level(c);
  out.shard_group = static_cast<int>(c.optimizer.shard_group);
  out.sequence = plan.sequence_parallel;
  out.hierarchical =
      c.ddp.hierarchical == Hierarchical::kFalse ? Hierarchical::kFalse : Hierarchical::kTrue;
  return out;
}

}  // namespace

std::string dry_run(const Config& config, int world, int nodes, int rank, bool full_groups,
                    const Profile& profile) {
  const auto start = std::chrono::steady_clock::now();
  const RunPlan plan = plan_run(config, world, DataCheck::kSkip);
  const ParallelLayout& layout = plan.layout;
  const RankCoord coord = layout.coord_of(rank);
  std::string text = layout.table(nullptr, full_groups ? static_cast<size_t>(-1) : 8);
  text += str("rank ", rank, " of ", world, " (node ", rank / (world / nodes), " of ", nodes,
              "): dp ", coord.dp, layout.cp_size() > 1 ? str(", cp ", coord.cp) : std::string(),
              ", tp ", coord.tp, ", pp ", coord.pp, "\n");
  text += str("  tp group ", format_group(layout.group_of(Axis::kTp, rank)), "\n");
  text += str("  dp group ", format_group(layout.group_of(Axis::kDp, rank)), "\n");
  if (layout.cp_size() > 1) {
    text += str("  cp group ", format_group(layout.group_of(Axis::kCp, rank)), "\n");
  }
  text += str("  pp group ", format_group(layout.group_of(Axis::kPp, rank)), "\n");
  const Schedule& schedule = plan.schedule;
  const int stages = schedule.total_stages();
  std::string chunks;
  for (int c = 0; c < schedule.chunks; ++c) {
    const int s = schedule.stage_of(coord.pp, c);
    chunks += str(c ? ", " : "", "stage ", s, " layers [", plan.stage_layers[s].first, ",",
                  plan.stage_layers[s].second, ")", s == 0 ? " + embedding" : "",
                  s == stages - 1 ? " + head and loss" : "");
  }
  text += str("  holds ", chunks, "\n");
  std::map<std::string, int> actions;
  for (const Action& a : schedule.ranks[coord.pp]) ++actions[action_name(a.kind)];
  std::string counts;
  for (const auto& [name, n] : actions) counts += str(counts.empty() ? "" : ", ", n, " ", name);
  text += str("  schedule ", schedule.name, ", ", schedule.microbatches, " micro-batches of ",
              plan.batch.micro_batch, ": ", counts, "\n");
  const Candidate candidate = configured(plan);
  const Prediction p = predict(plan, candidate, profile, PlanTopology{world, nodes});
  const RankMemory& m = p.memory[coord.pp];
  text += str("  memory: parameters ", mib(m.parameters), ", gradients ", mib(m.gradients),
              ", optimizer ", mib(m.optimizer), ", activations ", mib(m.activations), " (",
              m.in_flight, " micro-batch chunk(s) in flight)",
              m.checkpoint_snapshot > 0
                  ? str(", async checkpoint copy ", mib(m.checkpoint_snapshot), " (dp rank 0)")
                  : std::string(),
              " = ", mib(m.total()), " of tensors, + ", mib(profile.base_bytes), " process\n");
  char line[256];
  std::snprintf(line, sizeof line,
                "  predicted step %.2f ms (compute %.2f, bubble %.2f, communication %.2f, "
                "optimizer %.2f); profile: %s\n",
                p.step_seconds * 1e3, p.compute * 1e3, p.bubble * 1e3, p.communication() * 1e3,
                p.optimizer * 1e3, profile.source.c_str());
  text += line;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::snprintf(line, sizeof line, "dry run of rank %d in %.3f s\n", rank, seconds);
  return text + line;
}

}  // namespace triax
