// defines: triax::NodeTopology
//
// Which node each rank runs on, learnt at start-up from every rank's node key (its hostname,
// qualified by the launcher's node index where it gives one: two containers may share a
// hostname). Nodes are numbered in order of their lowest rank. Pure bookkeeping, so it is tested
// for any arrangement of ranks; ParallelContext gathers the keys and builds one.
// Why it matters: links inside a node (shared memory, NVLink) are far faster than links between
// nodes, so tensor-parallel groups (a collective per layer) should stay inside a node, and a
// data-parallel all-reduce can reduce inside each node before crossing the slow link once
// (ddp.hierarchical).
#pragma once

#include <string>
#include <vector>

namespace triax {

class NodeTopology {
 public:
  /// One node holding every rank (a single process, or tests without a topology).
  NodeTopology() : NodeTopology(std::vector<std::string>{"localhost"}) {}
  /// `node_key_of_rank[r]`: rank r's node key; equal keys are one node. Display names are the
  /// keys up to a '#' (the launcher's node index is only there to tell nodes apart).
  explicit NodeTopology(const std::vector<std::string>& node_key_of_rank);

  int world_size() const { return static_cast<int>(node_of_rank_.size()); }
  int num_nodes() const { return static_cast<int>(names_.size()); }
  int node_of(int rank) const;
  const std::string& name(int node) const;
  /// Ranks on `node`, ascending.
  const std::vector<int>& ranks_on(int node) const;
  /// Rank's index among the ranks of its node.
  int local_rank_of(int rank) const;
  /// Every node holds the same number of ranks (what hierarchical collectives need).
  bool uniform() const;

  /// Nodes that `group` (world ranks) touches, in node order.
  std::vector<int> nodes_of(const std::vector<int>& group) const;
  bool spans_nodes(const std::vector<int>& group) const { return nodes_of(group).size() > 1; }
  /// The number of `group`'s ranks on each node it touches when that number is the same on all
  /// of them, else 0 (what node-aware collectives need: ddp.hierarchical).
  int even_share(const std::vector<int>& group) const;
  /// "n1" or "n1+n2": the nodes a group touches, for the group table.
  std::string describe(const std::vector<int>& group) const;
  /// "2 nodes: n1 ranks [0,1,2,3], n2 ranks [4,5,6,7]".
  std::string summary() const;

 private:
  std::vector<int> node_of_rank_;
  std::vector<std::string> names_;
  std::vector<std::vector<int>> ranks_of_node_;
};

/// This process's node key: the hostname, plus "#<node index>" when the launcher names the node
/// (Slurm's SLURM_NODEID, torchrun's GROUP_RANK; `node_index` < 0 when it does not).
std::string local_node_key(int node_index);

}  // namespace triax
