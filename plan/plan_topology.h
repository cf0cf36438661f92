// defines: triax::PlanTopology
//
// The nodes a plan is for: `world` ranks on `nodes` nodes in equal consecutive blocks (as the
// launchers number them), as a NodeTopology, so the planner asks the same questions of it that
// ParallelContext asks of the job's real one (which groups span nodes, with what share).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "parallel/node_topology.h"
#include "plan/profile.h"

namespace triax {

struct PlanTopology {
  NodeTopology nodes;

  /// Throws ConfigError naming --nodes when `nodes` does not divide `world`.
  PlanTopology(int world, int node_count) : nodes(keys(world, node_count)) {}

  int per_node() const { return static_cast<int>(nodes.ranks_on(0).size()); }
  /// The ranks of `group` on each node it touches (1 where the shares differ).
  int share(const std::vector<int>& group) const { return std::max(1, nodes.even_share(group)); }
  /// kNet when `group` touches more than one node.
  LinkClass link_of(const std::vector<int>& group) const {
    return nodes.spans_nodes(group) ? LinkClass::kNet : LinkClass::kNode;
  }

 private:
  static std::vector<std::string> keys(int world, int node_count) {
    if (node_count < 1 || world % node_count != 0) {
      throw ConfigError(str("--nodes ", node_count, ": does not divide the world of ", world,
                            " ranks (valid: a divisor of ", world, ")"));
    }
    std::vector<std::string> out;
    for (int rank = 0; rank < world; ++rank) out.push_back(str("n", rank / (world / node_count)));
    return out;
  }
};

}  // namespace triax
