// defines: triax::ParallelContext
//
// A ParallelLayout made real: this rank's coordinates and one sub-communicator per group it
// belongs to (TP, DP, PP, CP, dp x cp under context parallelism, model-parallel, and the
// embedding group of the first and last pipeline stages). Built collectively by every rank of
// `world`, after the layout has been validated. It also learns the nodes: every rank's node key is
// gathered into a NodeTopology, which the group table shows, which warns when a tensor-parallel
// group crosses nodes, and which the node-aware data-parallel all-reduce (ddp.hierarchical) is
// built from.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/config_choices.h"
#include "parallel/comm/communicator.h"
#include "parallel/node_topology.h"
#include "parallel/parallel_layout.h"

namespace triax {

class ServerClient;

class ParallelContext {
 public:
  /// Collective over `world`; world->size() must equal layout.world_size(). `node_key`: this
  /// rank's node (local_node_key(); tests pass made-up ones to place ranks on pretend nodes).
  /// `dp_gradients`: ddp.hierarchical, resolved here against the node topology; the gradient
  /// communicator it picks is built here, once (dp_gradients()).
  ParallelContext(std::shared_ptr<Communicator> world, ParallelLayout layout,
                  const std::string& node_key = local_node_key(-1),
                  Hierarchical dp_gradients = Hierarchical::kAuto);
  /// The same world and nodes as `previous`, laid out anew (an online re-layout): collective
  /// over the world, but the nodes are not gathered again. `previous` stays valid.
  ParallelContext(const ParallelContext& previous, ParallelLayout layout,
                  Hierarchical dp_gradients);

  const ParallelLayout& layout() const { return layout_; }
  int rank() const { return world_->rank(); }
  int world_size() const { return world_->size(); }
  const RankCoord& coord() const { return coord_; }
  int dp_rank() const { return coord_.dp; }
  int tp_rank() const { return coord_.tp; }
  int pp_rank() const { return coord_.pp; }
  int cp_rank() const { return coord_.cp; }
  int dp_size() const { return layout_.dp_size(); }
  int tp_size() const { return layout_.tp_size(); }
  int pp_size() const { return layout_.pp_size(); }
  int cp_size() const { return layout_.cp_size(); }

  Communicator& world() { return *world_; }
  /// The world itself, for a context of another layout over the same ranks (an online
  /// re-layout: train/relayout.h), with this rank's node key.
  const std::shared_ptr<Communicator>& shared_world() const { return world_; }
  const std::string& node_key() const { return node_key_; }
  Communicator& tp() { return *tp_; }
  Communicator& dp() { return *dp_; }
  Communicator& pp() { return *pp_; }
  /// The context-parallel group (one rank without context parallelism).
  Communicator& cp() { return *cp_; }
  /// The ranks holding the same weights as this one, dp x cp (layout.replica_groups()): gradients
  /// are averaged and optimizer state sharded over it. dp() itself when cp = 1; dp() stays the
  /// group the data is dealt over.
  Communicator& replica() { return replica_ ? *replica_ : *dp_; }
  Communicator& model_parallel() { return *model_parallel_; }
  /// The embedding group, or nullptr on ranks that are neither the first nor the last stage.
  Communicator* embedding() { return embedding_.get(); }

  bool is_first_stage() const { return coord_.pp == 0; }
  bool is_last_stage() const { return coord_.pp == pp_size() - 1; }
  /// Global ranks of the neighbouring pipeline stages, -1 at the ends.
  int prev_stage_rank() const;
  int next_stage_rank() const;

  /// "[rank 5 dp1 tp1 pp1]", the prefix of this rank's messages.
  std::string prefix() const;

  const NodeTopology& nodes() const { return nodes_; }
  /// The layout's group table with the node(s) each group lives on, and the node summary.
  std::string table() const;
  /// Messages for tensor-parallel groups that cross nodes (they work, but each layer's
  /// collectives then take the slow link); empty when every tp group is inside one node.
  std::string tp_span_warning() const;

  /// The group for gradient reductions (replica(): dp, or dp x cp), as ddp.hierarchical chose at
  /// construction: a node-aware HierarchicalCommunicator (scatter scheme; leader scheme for
  /// `leader`), or replica() itself.
  Communicator& dp_gradients() { return dp_gradients_ ? *dp_gradients_ : replica(); }
  /// ddp.mode: parameter_server: this worker's link to its position's servers (set after
  /// construction by whoever made them; null in allreduce mode).
  void set_parameter_servers(ServerClient* client) { servers_ = client; }
  ServerClient* parameter_servers() const { return servers_; }
  /// Asynchronous parameter servers dropped the workers at dp ranks `dropped` (lost:
  /// job/heartbeat.h): the world and the dp group become the others' (collective over them alone;
  /// tp = pp = cp = 1, where a worker is one rank). The layout and this rank's coordinates stay
  /// (its data is still its dp rank's), so dp_size() keeps the launch's width and dp().size() is
  /// the workers left.
  void drop_data_ranks(const std::vector<int>& dropped);
  /// The ddp.hierarchical the context was built with.
  Hierarchical dp_gradient_mode() const { return dp_gradient_mode_; }
  /// The choice of dp_gradients() and why, for the log.
  const std::string& dp_choice() const { return dp_choice_; }

 private:
  std::shared_ptr<Communicator> world_;
  std::string node_key_;
  ParallelLayout layout_;
  RankCoord coord_;
  std::unique_ptr<Communicator> tp_, dp_, pp_, cp_, model_parallel_, embedding_;
  std::unique_ptr<Communicator> replica_;  // dp x cp; null when cp = 1 (dp_ serves)
  NodeTopology nodes_;
  /// Decides dp_gradients() (every rank of a dp group alike) and builds it (collective over dp).
  void build_groups();
  void build_dp_gradients();
  Hierarchical dp_gradient_mode_;
  std::unique_ptr<Communicator> dp_gradients_;  // null: flat, dp() itself
  std::string dp_choice_;
  ServerClient* servers_ = nullptr;
  std::vector<int> live_ranks_;  // the launch ranks in world_ (fewer after drop_data_ranks)
  std::vector<std::shared_ptr<Communicator>> retired_;  // replaced by drop_data_ranks, kept
};

}  // namespace triax
