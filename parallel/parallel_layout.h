// defines: triax::Axis, triax::RankCoord, triax::ParallelLayout
//
// Pure layout arithmetic: which (dp, cp, tp, pp) coordinate each rank has and which ranks form
// each group. No communication, so it is tested on its own for any world size and order.
//
// The order string lists axes fastest-varying first. With Megatron's default "tp-dp-pp":
//   rank = tp + TP * (dp + DP * pp)
// so adjacent ranks share a TP group (same node, fastest links) and PP groups stride across
// nodes. For world 16, tp 2, pp 4: TP groups [0,1],[2,3],..., DP groups [0,2],[1,3],[4,6],...,
// PP groups [0,4,8,12],[1,5,9,13],...
//
// Context parallelism (cp, parallel.context) is a fourth axis: the ranks of a cp group hold the
// same weights and the same sequences, each a part of every sequence's positions. An order string
// of three axes places cp right after tp ("tp-cp-dp-pp", Megatron's order): its ring or all-to-all
// runs in every layer, on the next-fastest links. dp = world / (cp * tp * pp).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "parallel/node_topology.h"

namespace triax {

enum class Axis { kTp = 0, kDp = 1, kPp = 2, kCp = 3 };

/// "tp", "dp", "pp", "cp".
const char* axis_name(Axis axis);

struct RankCoord {
  int dp = 0;
  int tp = 0;
  int pp = 0;
  int cp = 0;
  bool operator==(const RankCoord& other) const {
    return dp == other.dp && tp == other.tp && pp == other.pp && cp == other.cp;
  }
};

using RankGroups = std::vector<std::vector<int>>;

/// "[0,2,4]".
std::string format_group(const std::vector<int>& group);

class ParallelLayout {
 public:
  /// Throws ConfigError (naming parallel.tensor / pipeline / context / order) when the world
  /// does not factor: world % (cp * tp * pp) != 0, a size < 1, or a bad order string.
  static ParallelLayout create(int world_size, int tp, int pp,
                               const std::string& order = "tp-dp-pp", int cp = 1);
  /// The same from the YAML section; also checks parallel.data against the launch's dp.
  static ParallelLayout from_config(const ParallelConfig& config, int world_size);

  int world_size() const { return world_size_; }
  int tp_size() const { return sizes_[0]; }
  int dp_size() const { return sizes_[1]; }
  int pp_size() const { return sizes_[2]; }
  int cp_size() const { return sizes_[3]; }
  int size(Axis axis) const { return sizes_[static_cast<int>(axis)]; }
  /// Fastest-varying axis first.
  const std::array<Axis, 4>& order() const { return order_; }
  /// "tp-dp-pp"; cp is named only where the layout has it (cp > 1).
  std::string order_string() const;

  RankCoord coord_of(int rank) const;
  int rank_of(const RankCoord& coord) const;

  /// Every group along `axis` (ranks that differ only in that coordinate), each in ascending
  /// order of the axis coordinate, groups ordered by their lowest rank.
  RankGroups groups(Axis axis) const;
  /// The group along `axis` that holds `rank`.
  std::vector<int> group_of(Axis axis, int rank) const;
  /// Ranks that hold one full model replica (same dp and cp coordinates): tp x pp.
  RankGroups model_parallel_groups() const;
  /// Ranks that hold the same weights (same tp and pp coordinates): dp x cp. Gradients are
  /// averaged and optimizer state is sharded over these; the dp groups when cp = 1.
  RankGroups replica_groups() const;
  /// Per PP group: its first and last stage (they share the tied embedding). One rank when pp=1.
  RankGroups embedding_groups() const;

  /// Human-readable table: a header and one line per group; with `nodes`, each group's node(s)
  /// ("tp group 0: [0,1] on n1", "pp group 0: [0,4] on n1+n2"). An axis with more than
  /// `max_groups` groups is summarised (its first two and last groups, and the count).
  std::string table(const NodeTopology* nodes = nullptr,
                    size_t max_groups = static_cast<size_t>(-1)) const;

 private:
  ParallelLayout() = default;
  int coordinate(int rank, Axis axis) const;
  RankGroups groups_where(const std::function<std::array<int, 4>(const RankCoord&)>& key) const;

  int world_size_ = 1;
  std::array<int, 4> sizes_{1, 1, 1, 1};  // indexed by Axis
  std::array<Axis, 4> order_{Axis::kTp, Axis::kCp, Axis::kDp, Axis::kPp};
};

}  // namespace triax
