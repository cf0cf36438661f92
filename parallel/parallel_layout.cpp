#include "parallel/parallel_layout.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace triax {
namespace {

const std::vector<std::string> kAxisNames = {"tp", "dp", "pp", "cp"};

std::array<Axis, 4> parse_order(const std::string& order) {
  const std::string valid =
      "(valid: the axes tp, dp, pp each once and optionally cp, fastest first, joined by '-', "
      "e.g. tp-dp-pp or tp-cp-dp-pp)";
  const std::vector<std::string> parts = split(order, '-');
  std::vector<Axis> axes;
  std::vector<std::string> seen;
  for (const std::string& part : parts) {
    const auto it = std::find(kAxisNames.begin(), kAxisNames.end(), part);
    if (it == kAxisNames.end()) {
      const std::string hint = closest(part, kAxisNames);
      throw ConfigError(str("parallel.order: '", order, "' has unknown axis '", part, "'",
                            hint.empty() ? "" : str(" (did you mean '", hint, "'?)"), " ", valid));
    }
    if (std::find(seen.begin(), seen.end(), part) != seen.end()) {
      throw ConfigError(str("parallel.order: '", order, "' repeats axis '", part, "' ", valid));
    }
    axes.push_back(static_cast<Axis>(it - kAxisNames.begin()));
    seen.push_back(part);
  }
  std::vector<std::string> missing;
  for (size_t a = 0; a < 3; ++a) {  // tp, dp, pp; cp may be left out
    if (std::find(seen.begin(), seen.end(), kAxisNames[a]) == seen.end()) {
      missing.push_back(kAxisNames[a]);
    }
  }
  if (!missing.empty()) {
    throw ConfigError(
        str("parallel.order: '", order, "' lacks axis ", join(missing, ", "), " ", valid));
  }
  if (axes.size() == 3) {  // cp right after tp, as Megatron orders them
    axes.insert(std::find(axes.begin(), axes.end(), Axis::kTp) + 1, Axis::kCp);
  }
  return {axes[0], axes[1], axes[2], axes[3]};
}

}  // namespace

std::string format_group(const std::vector<int>& group) {
  return str("[", join(group, ","), "]");
}

const char* axis_name(Axis axis) {
  return kAxisNames[static_cast<size_t>(axis)].c_str();
}

ParallelLayout ParallelLayout::create(int world_size, int tp, int pp, const std::string& order,
                                      int cp) {
  if (world_size < 1) throw ConfigError(str("launch: world size ", world_size, " must be >= 1"));
  if (tp < 1)
    throw ConfigError(str("parallel.tensor: ", tp, " is out of range (valid: integers >= 1)"));
  if (pp < 1)
    throw ConfigError(str("parallel.pipeline: ", pp, " is out of range (valid: integers >= 1)"));
  if (cp < 1)
    throw ConfigError(str("parallel.context: ", cp, " is out of range (valid: integers >= 1)"));
  ParallelLayout layout;
  layout.order_ = parse_order(order);
  const int64_t unit = static_cast<int64_t>(cp) * tp * pp;  // no int overflow at 2^30 each
  if (cp > 1 && world_size % unit != 0) {
    throw ConfigError(str("parallel: world size ", world_size,
                          " is not divisible by parallel.context * parallel.tensor * "
                          "parallel.pipeline = ",
                          cp, " * ", tp, " * ", pp, " = ", unit,
                          " (dp = world / (context * tensor * pipeline) must be whole; launch a "
                          "multiple of ",
                          unit, " ranks: ", unit, ", ", 2 * unit, ", ", 3 * unit, ", ...)"));
  }
  if (world_size % (static_cast<int64_t>(tp) * pp) != 0) {
    throw ConfigError(str("parallel: world size ", world_size,
                          " is not divisible by parallel.tensor * parallel.pipeline = ", tp, " * ",
                          pp, " = ", tp * pp,
                          " (dp = world / (tensor * pipeline) must be whole; "
                          "launch a multiple of ",
                          tp * pp, " ranks: ", tp * pp, ", ", 2 * tp * pp, ", ", 3 * tp * pp,
                          ", ...)"));
  }
  layout.world_size_ = world_size;
  layout.sizes_ = {tp, static_cast<int>(world_size / unit), pp, cp};
  return layout;
}

ParallelLayout ParallelLayout::from_config(const ParallelConfig& config, int world_size) {
  const auto narrow = [](int64_t value) {
    return static_cast<int>(std::min<int64_t>(value, 1 << 30));
  };
  ParallelLayout layout = create(world_size, narrow(config.tensor), narrow(config.pipeline),
                                 config.order, narrow(config.context));
  if (config.data != 0 && config.data != layout.dp_size()) {
    throw ConfigError(
        str("parallel.data: ", config.data,
            " does not match this launch, where dp = "
            "world / (",
            config.context > 1 ? "context * " : "", "tensor * pipeline) = ", world_size, " / (",
            config.context > 1 ? str(config.context, " * ") : "", config.tensor, " * ",
            config.pipeline, ") = ", layout.dp_size(),
            ". The data-parallel width is "
            "chosen at launch, not in the YAML: remove parallel.data (or set it to 0), "
            "or launch ",
            config.data * config.context * config.tensor * config.pipeline,
            " ranks for dp=", config.data));
  }
  return layout;
}

std::string ParallelLayout::order_string() const {
  std::vector<std::string> names;
  for (Axis a : order_) {
    if (a != Axis::kCp || cp_size() > 1) names.push_back(axis_name(a));
  }
  return join(names, "-");
}

int ParallelLayout::coordinate(int rank, Axis axis) const {
  int stride = 1;
  for (Axis a : order_) {
    if (a == axis) return (rank / stride) % size(a);
    stride *= size(a);
  }
  return 0;
}

RankCoord ParallelLayout::coord_of(int rank) const {
  TRIAX_CHECK(rank >= 0 && rank < world_size_, "rank ", rank, " not in [0, ", world_size_, ")");
  return RankCoord{coordinate(rank, Axis::kDp), coordinate(rank, Axis::kTp),
                   coordinate(rank, Axis::kPp), coordinate(rank, Axis::kCp)};
}

int ParallelLayout::rank_of(const RankCoord& coord) const {
  const std::array<int, 4> value{coord.tp, coord.dp, coord.pp, coord.cp};  // indexed by Axis
  int rank = 0;
  int stride = 1;
  for (Axis a : order_) {
    const int v = value[static_cast<size_t>(a)];
    TRIAX_CHECK(v >= 0 && v < size(a), axis_name(a), " coordinate ", v, " out of range");
    rank += v * stride;
    stride *= size(a);
  }
  return rank;
}

RankGroups ParallelLayout::groups_where(
    const std::function<std::array<int, 4>(const RankCoord&)>& key) const {
  // Ranks ascend, so each group is in ascending rank order and groups appear by lowest rank.
  std::map<std::array<int, 4>, size_t> index;
  RankGroups groups;
  for (int rank = 0; rank < world_size_; ++rank) {
    const auto k = key(coord_of(rank));
    const auto it = index.find(k);
    if (it == index.end()) {
      index[k] = groups.size();
      groups.push_back({rank});
    } else {
      groups[it->second].push_back(rank);
    }
  }
  return groups;
}

RankGroups ParallelLayout::groups(Axis axis) const {
  // Only `axis` varies within a group and the rank grows with it, so a member's position in
  // its group is its coordinate on `axis`.
  return groups_where([axis](const RankCoord& c) {
    return std::array<int, 4>{axis == Axis::kTp ? -1 : c.tp, axis == Axis::kDp ? -1 : c.dp,
                              axis == Axis::kPp ? -1 : c.pp, axis == Axis::kCp ? -1 : c.cp};
  });
}

std::vector<int> ParallelLayout::group_of(Axis axis, int rank) const {
  // The ranks whose coordinates are rank's but along `axis`: ascending, since a coordinate's
  // stride is positive (the planner asks this for every candidate; groups() is O(world)).
  RankCoord c = coord_of(rank);
  int& along = axis == Axis::kDp   ? c.dp
               : axis == Axis::kTp ? c.tp
               : axis == Axis::kPp ? c.pp
                                   : c.cp;
  std::vector<int> group;
  group.reserve(static_cast<size_t>(size(axis)));
  for (along = 0; along < size(axis); ++along) group.push_back(rank_of(c));
  return group;
}

RankGroups ParallelLayout::model_parallel_groups() const {
  return groups_where([](const RankCoord& c) { return std::array<int, 4>{-1, c.dp, -1, c.cp}; });
}

RankGroups ParallelLayout::replica_groups() const {
  return groups_where([](const RankCoord& c) { return std::array<int, 4>{c.tp, -1, c.pp, -1}; });
}

RankGroups ParallelLayout::embedding_groups() const {
  RankGroups result;
  for (const auto& pp_group : groups(Axis::kPp)) {
    if (pp_group.size() == 1) {
      result.push_back({pp_group.front()});
    } else {
      result.push_back({pp_group.front(), pp_group.back()});
    }
  }
  return result;
}

std::string ParallelLayout::table(const NodeTopology* nodes, size_t max_groups) const {
  std::ostringstream out;
  out << "layout: world " << world_size_ << " = dp " << dp_size();
  if (cp_size() > 1) out << " x cp " << cp_size();
  const std::string order = order_string();
  out << " x tp " << tp_size() << " x pp " << pp_size() << ", order " << order << " ("
      << order.substr(0, 2) << " fastest)\n";
  bool summarised = false;
  const auto line = [&](const char* name, size_t i, const std::vector<int>& group) {
    out << "  " << name << " group " << i << ": " << format_group(group);
    if (nodes != nullptr && nodes->world_size() == world_size_) {
      out << " on " << nodes->describe(group);
    }
    out << "\n";
  };
  const auto section = [&](const char* name, const RankGroups& groups) {
    if (groups.size() <= max_groups) {
      for (size_t i = 0; i < groups.size(); ++i) line(name, i, groups[i]);
      return;
    }
    // A person reads the pattern from the first two and the last group.
    summarised = true;
    line(name, 0, groups[0]);
    line(name, 1, groups[1]);
    out << "  ... " << groups.size() - 3 << " more " << name << " groups of " << groups[0].size()
        << " ranks\n";
    line(name, groups.size() - 1, groups.back());
  };
  section("tp", groups(Axis::kTp));
  section("dp", groups(Axis::kDp));
  section("pp", groups(Axis::kPp));
  if (cp_size() > 1) {
    section("cp", groups(Axis::kCp));
    section("replica (dp x cp)", replica_groups());
  }
  section("model-parallel", model_parallel_groups());
  section("embedding", embedding_groups());
  if (summarised) {
    out << "  (groups summarised; `triax plan CONFIG --world " << world_size_
        << " --rank R --groups` lists them all)\n";
  }
  return out.str();
}

}  // namespace triax
