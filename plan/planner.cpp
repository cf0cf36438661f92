#include "plan/planner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <future>
#include <thread>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "train/run_plan.h"

namespace triax {
LayoutPlan plan_layouts(const Config& config, const PlanRequest& request, const Profile& profile) {
  if (profile.model != model_key(config)) {
    throw ConfigError(str("profile ", profile.source, " was calibrated for '", profile.model,
                          "', not for this model ('", model_key(config),
                          "'): a layer's time depends on its shape (valid: a profile from "
                          "`triax calibrate` with this configuration)"));
  }
  const ModelSpec& spec = model_spec(config.model.arch);
  LayoutPlan plan;
  plan.profile_source = profile.source;
  plan.base_bytes = profile.base_bytes;
  plan.peak_flops = profile.peak_flops;
  plan.world = request.world;
  const PlanTopology topology{request.world, request.nodes};
  if (!profile.nominal && topology.per_node() != profile.ranks_per_node) {
    plan.notes.push_back(
        str("compute times scaled by ", topology.per_node(), "/", profile.ranks_per_node,
            " (ranks per node planned / calibrated: they share the node's cores)"));
  }
  if (request.nodes > 1 && !profile.has_link(LinkClass::kNet)) {
    plan.notes.push_back(
        "links across nodes not calibrated: nominal 50 us + 1 GB/s (calibrate on two nodes)");
  }
  const double units =
      static_cast<double>(config.train.global_batch * spec.units_per_sample(config.model));
  // Each (tp, pp) pair the constraints allow is enumerated and predicted on its own (its
  // candidates predicted as they are found, their RunPlans not kept), on request.threads
  // threads; the parts are joined in the pairs' order, and the ranking's sort is total, so the
  // plan does not depend on the threads.
  std::vector<std::pair<int, int>> pairs;
  for (int tp = 1; tp <= request.world; ++tp) {
    if (request.world % tp != 0 || (request.constraints.tp > 0 && tp != request.constraints.tp)) {
      continue;
    }
    for (int pp = 1; pp <= request.world / tp; ++pp) {
      if ((request.world / tp) % pp != 0) continue;
      if (request.constraints.pp > 0 && pp != request.constraints.pp) continue;
      pairs.emplace_back(tp, pp);
    }
  }
  struct Part {
    std::vector<PlanRow> rows;
    int candidates = 0, too_big = 0;
    double smallest_too_big = 0;
  };
  std::vector<Part> parts(pairs.size());
  ScheduleCache schedules;  // shared by the pairs: a schedule depends on pp, not on tp
  const auto plan_pair = [&](size_t i) {
    Part& part = parts[i];
    PredictCache cache;  // the pair's candidates share schedules; other pairs' do not
    PlanConstraints constraints = request.constraints;
    std::tie(constraints.tp, constraints.pp) = pairs[i];
    const auto predict_one = [&](const Candidate& c, const RunPlan& run) {
      PlanRow row{c, predict(run, c, profile, topology, &cache), 0};
      if (request.memory_per_rank > 0 &&
          row.prediction.peak_bytes + profile.base_bytes > request.memory_per_rank) {
        const double needs = row.prediction.peak_bytes + profile.base_bytes;
        if (part.too_big++ == 0 || needs < part.smallest_too_big) part.smallest_too_big = needs;
        return;
      }
      row.tokens_per_second = units / row.prediction.step_seconds;
      if (profile.peak_flops > 0) {
        row.mfu = row.tokens_per_second * spec.flops_per_unit(config.model) /
                  (request.world * profile.peak_flops);
      }
      part.rows.push_back(row);
    };
    part.candidates = static_cast<int>(enumerate_candidates(config, request.world, request.nodes,
                                                            constraints, predict_one, &schedules)
                                           .size());
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads =
      std::min(pairs.size(), static_cast<size_t>(request.threads > 0 ? request.threads : cores));
  if (threads <= 1) {
    for (size_t i = 0; i < pairs.size(); ++i) plan_pair(i);
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::future<void>> workers;
    for (size_t t = 0; t < threads; ++t) {
      workers.push_back(std::async(std::launch::async, [&] {
        for (size_t i = next++; i < pairs.size(); i = next++) plan_pair(i);
      }));
    }
    for (auto& w : workers) w.get();  // rethrows a worker's error
  }
  for (Part& part : parts) {
    plan.candidates += part.candidates;
    if (part.too_big > 0 && (plan.too_big == 0 || part.smallest_too_big < plan.smallest_too_big)) {
      plan.smallest_too_big = part.smallest_too_big;
    }
    plan.too_big += part.too_big;
    for (PlanRow& row : part.rows) plan.rows.push_back(std::move(row));
  }
  if (plan.candidates == 0) {
    throw ConfigError(str("no layout of ", request.world, " ranks",
                          request.constraints.reason.empty()
                              ? " is valid for this model and global batch"
                              : " keeps " + request.constraints.reason,
                          " (valid: a world size that cp x tp x pp divides and whose dp divides "
                          "train.global_batch ",
                          config.train.global_batch, ")"));
  }
  std::sort(plan.rows.begin(), plan.rows.end(), [](const PlanRow& a, const PlanRow& b) {
    if (a.prediction.step_seconds != b.prediction.step_seconds) {
      return a.prediction.step_seconds < b.prediction.step_seconds;
    }
    if (a.prediction.peak_bytes != b.prediction.peak_bytes) {
      return a.prediction.peak_bytes < b.prediction.peak_bytes;
    }
    return a.candidate.describe() < b.candidate.describe();
  });
  if (plan.rows.empty()) {
    throw ConfigError(
        str("no layout of ", config.model.layers, " layers on ", request.world, " ranks fits in ",
            fixed(mib(request.memory_per_rank), 0), " MiB per rank",
            request.memory_source.empty() ? "" : " (" + request.memory_source + ")", " (",
            plan.candidates, " valid layouts, all too big, the smallest needing ",
            fixed(mib(plan.smallest_too_big), 0), " MiB; a rank's process holds ",
            fixed(mib(profile.base_bytes), 0), " MiB besides its tensors",
            request.constraints.reason.empty() ? "" : "; ", request.constraints.reason,
            ") (valid: more memory per rank, more ranks, or a smaller "
            "train.global_batch)"));
  }
  return plan;
}

std::string LayoutPlan::table(const Config& config, const PlanRequest& request, int top) const {
  const ModelSpec& spec = model_spec(config.model.arch);
  std::string text = str(
      "plan for ", model_key(config), ", global batch ", config.train.global_batch, ", on ",
      request.world, " ranks (", request.nodes, " node", request.nodes > 1 ? "s" : "", "), memory ",
      request.memory_per_rank > 0
          ? fixed(mib(request.memory_per_rank), 0) + " MiB per rank" +
                (request.memory_source.empty() ? "" : " (" + request.memory_source + ")")
          : std::string("not limited (no --device or --memory-per-rank)"),
      "\nprofile: ", profile_source, "\n");
  for (const std::string& note : notes) text += "note: " + note + "\n";
  if (!request.constraints.reason.empty()) text += "kept: " + request.constraints.reason + "\n";
  text += str(candidates, " valid layouts, ", too_big, " too big for the memory",
              too_big > 0 ? str(" (the smallest needs ", fixed(mib(smallest_too_big), 0),
                                " MiB with its process)")
                          : std::string(),
              ", ", rows.size(), " ranked\n");
  const bool device = peak_flops > 0;
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-42s %9s %10s %7s %7s %7s %7s %7s %9s  %s\n", "rank",
                "layout", "step ms",
                std::string(spec.unit_short).append(device ? "/s/dev" : "/s").c_str(),
                device ? "MFU" : "", "compute", "bubble", "comm", "optim", "peak MiB", "bound");
  text += line;
  const size_t shown =
      top > 0 ? std::min<size_t>(static_cast<size_t>(top), rows.size()) : rows.size();
  for (size_t i = 0; i < shown; ++i) {
    const PlanRow& row = rows[i];
    const Prediction& p = row.prediction;
    const double ms = 1e3;
    // Memory is a reason too: how close the fullest rank comes to the limit.
    std::string bound = p.bound();
    if (request.memory_per_rank > 0) {
      bound += str(", memory ",
                   fixed(100 * (p.peak_bytes + base_bytes) / request.memory_per_rank, 0), "%");
    }
    const std::string mfu = device ? fixed(100 * row.mfu, 1) + "%" : std::string();
    std::snprintf(
        line, sizeof line, "%4zu  %-42s %9.2f %10.0f %7s %7.2f %7.2f %7.2f %7.2f %9.1f  %s\n",
        i + 1, row.candidate.describe().c_str(), p.step_seconds * ms,
        row.tokens_per_second / (device ? world : 1), mfu.c_str(), p.compute * ms, p.bubble * ms,
        p.communication() * ms, p.optimizer * ms, mib(p.peak_bytes), bound.c_str());
    text += line;
  }
  if (shown < rows.size()) text += str("  ... ", rows.size() - shown, " more (--top 0: all)\n");
  text +=
      "  (ms per step; compute: the busiest rank's forward and backward; bubble: pipeline "
      "idle on it; comm: exposed gradient sync, tp collectives beyond the layer times and "
      "context exchanges; peak: tensor bytes of the fullest rank; bound: the largest part and, "
      "with a limit, the fullest rank's share of it, its process included; MFU: the model's "
      "FLOPs without recompute over the devices' peak; --explain ROW: one row's arithmetic)\n";
  return text;
}

std::string LayoutPlan::recommendation(const std::string& config_path) const {
  const PlanRow& best = rows.front();
  std::string text = str("recommended: ", best.candidate.describe(), ", ",
                         fixed(best.prediction.step_seconds * 1e3, 2), " ms per step predicted (",
                         best.prediction.bound(), "-bound",
                         best.mfu > 0 ? str(", MFU ", fixed(100 * best.mfu, 1), "%") : "", ")");
  if (rows.size() > 1) {
    const PlanRow& second = rows[1];
    text += str(", ", fixed(second.prediction.step_seconds / best.prediction.step_seconds, 3),
                "x faster than the runner-up ", second.candidate.describe());
  }
  return text + str("\n  run: triax train ", config_path, " ", best.candidate.overrides(), "\n");
}

std::string LayoutPlan::csv() const {
  std::string text =
      "rank,layout,overrides,step_s,compute_s,bubble_s,comm_s,optimizer_s,peak_bytes,"
      "rank_bytes\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PlanRow& row = rows[i];
    std::vector<std::string> per_rank;
    for (const RankMemory& m : row.prediction.memory) per_rank.push_back(fixed(m.total(), 0));
    text +=
        str(i + 1, ",", row.candidate.describe(), ",", row.candidate.overrides(), ",",
            row.prediction.step_seconds, ",", row.prediction.compute, ",", row.prediction.bubble,
            ",", row.prediction.communication(), ",", row.prediction.optimizer, ",",
            fixed(row.prediction.peak_bytes, 0), ",", join(per_rank, ";"), "\n");
  }
  return text;
}

Profile profile_for(const Config& config) {
  return config.parallel.profile.empty() ? nominal_profile(config)
                                         : Profile::read(config.parallel.profile);
}

LayoutChoice choose_layout(const Config& config, int world, int nodes,
                           const PlanConstraints& constraints) {
  PlanRequest request;
  request.world = world;
  request.nodes = nodes;
  request.memory_per_rank = config.parallel.memory_per_rank_mb * 1024 * 1024;
  request.constraints = constraints;
  request.threads = 1;  // every rank of a node plans at once
  const LayoutPlan plan = plan_layouts(config, request, profile_for(config));
  const PlanRow& best = plan.rows.front();
  LayoutChoice choice;
  choice.config = best.candidate.applied(config);
  choice.message = str("parallel: auto chose ", best.candidate.describe(), " (",
                       fixed(best.prediction.step_seconds * 1e3, 2), " ms per step predicted, ",
                       fixed(mib(best.prediction.peak_bytes), 1), " MiB of tensors per rank; ",
                       plan.rows.size(), " layouts ranked",
                       constraints.reason.empty() ? "" : "; keeps " + constraints.reason, ")");
  if (plan.rows.size() > 1) {
    const PlanRow& second = plan.rows[1];
    choice.message += str("; runner-up ", second.candidate.describe(), " (",
                          fixed(second.prediction.step_seconds * 1e3, 2), " ms)");
  }
  choice.message += str("; profile: ", plan.profile_source);
  return choice;
}

}  // namespace triax
