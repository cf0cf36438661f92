#include "parallel/parallel_context.h"

#include <algorithm>

#include "core/error.h"
#include "parallel/comm/gather_text.h"
#include "parallel/comm/hierarchical_communicator.h"
#include "parallel/comm/mpi_communicator.h"

namespace triax {
namespace {

// The split color of `rank`: the index of the group holding it, or -1 if none does.
int color_of(const RankGroups& groups, int rank) {
  for (size_t i = 0; i < groups.size(); ++i) {
    if (std::find(groups[i].begin(), groups[i].end(), rank) != groups[i].end()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// This rank's group of `groups` as a communicator over `world`, named for flight records and
// timeouts; null if no group holds it. Under MPI each group is made by its members alone
// (MPI_Comm_create_group: a one-rank group costs nothing, and no group waits on the whole world);
// elsewhere by a split of the world (key = global rank).
std::unique_ptr<Communicator> group_of(Communicator& world, const RankGroups& groups,
                                       const char* name, int tag) {
  const int color = color_of(groups, world.rank());
  std::vector<int> members;
  if (color >= 0) members = groups[static_cast<size_t>(color)];
  std::sort(members.begin(), members.end());  // ranks ascend with the group's coordinate
  std::unique_ptr<Communicator> group;
  if (dynamic_cast<MpiCommunicator*>(&world) == nullptr) {
    group = world.split(color, world.rank());
  } else if (color >= 0) {
    group = mpi_subgroup(world, members, tag);
  }
  if (group) group->set_label(name, members);
  return group;
}

}  // namespace

ParallelContext::ParallelContext(std::shared_ptr<Communicator> world, ParallelLayout layout,
                                 const std::string& node_key, Hierarchical dp_gradients)
    : world_(std::move(world)),
      node_key_(node_key),
      layout_(std::move(layout)),
      dp_gradient_mode_(dp_gradients) {
  TRIAX_CHECK(world_ != nullptr, "ParallelContext needs a world communicator");
  build_groups();
  nodes_ = NodeTopology(all_gather_text(*world_, node_key));
  build_dp_gradients();
}

ParallelContext::ParallelContext(const ParallelContext& previous, ParallelLayout layout,
                                 Hierarchical dp_gradients)
    : world_(previous.world_),
      node_key_(previous.node_key_),
      layout_(std::move(layout)),
      nodes_(previous.nodes_),  // the same processes on the same nodes
      dp_gradient_mode_(dp_gradients) {
  TRIAX_CHECK(previous.live_ranks_.size() == static_cast<size_t>(world_->size()),
              "a new layout over a world that dropped ranks");
  build_groups();
  build_dp_gradients();
}

void ParallelContext::build_groups() {
  TRIAX_CHECK(world_->size() == layout_.world_size(), "the world communicator has ", world_->size(),
              " ranks but the layout is for ", layout_.world_size());
  coord_ = layout_.coord_of(world_->rank());
  std::vector<int> everyone(static_cast<size_t>(world_->size()));
  for (int k = 0; k < world_->size(); ++k) everyone[static_cast<size_t>(k)] = k;
  world_->set_label("world", everyone);
  // MPI_Comm_create_group spins while it waits for a group's other members; meeting at the
  // world's yielding barrier first keeps that wait short when ranks are oversubscribed (Note
  // [Oversubscribed progress]). Tags apart per group kind: a rank in two groups with others
  // creates them in the same order as they do, and distinct tags make it certain.
  if (dynamic_cast<MpiCommunicator*>(world_.get()) != nullptr) world_->barrier();
  tp_ = group_of(*world_, layout_.groups(Axis::kTp), "tp", 1);
  dp_ = group_of(*world_, layout_.groups(Axis::kDp), "dp", 2);
  pp_ = group_of(*world_, layout_.groups(Axis::kPp), "pp", 3);
  cp_ = group_of(*world_, layout_.groups(Axis::kCp), "cp", 4);
  if (layout_.cp_size() > 1) {
    replica_ = group_of(*world_, layout_.replica_groups(), "dp x cp", 5);
  }
  model_parallel_ = group_of(*world_, layout_.model_parallel_groups(), "model-parallel", 6);
  embedding_ = group_of(*world_, layout_.embedding_groups(), "embedding", 7);
  TRIAX_CHECK(tp_->rank() == coord_.tp && dp_->rank() == coord_.dp && pp_->rank() == coord_.pp &&
                  cp_->rank() == coord_.cp,
              "sub-communicator ranks disagree with the layout");
  live_ranks_ = everyone;
}

void ParallelContext::drop_data_ranks(const std::vector<int>& dropped) {
  TRIAX_CHECK(tp_size() == 1 && pp_size() == 1 && cp_size() == 1,
              "dropping a worker needs parallel.tensor = pipeline = context = 1 (a worker is then "
              "one rank)");
  // Launch ranks = dp ranks here; every survivor passes the same list (server 0's, at a meeting).
  std::vector<int> members;   // the launch ranks left
  std::vector<int> in_world;  // their ranks in the current world (the launch ranks left before)
  for (size_t k = 0; k < live_ranks_.size(); ++k) {
    if (std::find(dropped.begin(), dropped.end(), live_ranks_[k]) == dropped.end()) {
      members.push_back(live_ranks_[k]);
      in_world.push_back(static_cast<int>(k));
    }
  }
  if (members.size() == live_ranks_.size()) return;  // nothing new
  TRIAX_CHECK(std::find(members.begin(), members.end(), coord_.dp) != members.end(), "dp rank ",
              coord_.dp, " was dropped but is still training");
  // MPI_Comm_create_group: only the members take part (a dropped rank is gone). Tags apart per
  // drop, so that two drops' creations never match each other.
  const int tag = 2 * static_cast<int>(dropped.size());
  // The replaced communicators stay alive: DDP and others hold references to them (they are no
  // longer used for collectives), and freeing a communicator with a dead member is not safe.
  const std::shared_ptr<Communicator> old_world = world_;
  retired_.push_back(old_world);
  retired_.push_back(std::shared_ptr<Communicator>(std::move(dp_)));
  if (dp_gradients_) retired_.push_back(std::shared_ptr<Communicator>(std::move(dp_gradients_)));
  world_ = std::shared_ptr<Communicator>(mpi_subgroup(*old_world, in_world, tag));
  world_->set_label("world", members);
  std::vector<int> all(members.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
  dp_ = mpi_subgroup(*world_, all, tag + 1);
  dp_->set_label("dp", members);
  live_ranks_ = members;
}

std::string ParallelContext::table() const {
  // Up to 8 groups an axis in full (every layout of 8 ranks); larger jobs in summary, or the
  // start-up log of a 1024-rank job would be thousands of lines.
  constexpr size_t kGroupsInFull = 8;
  return layout_.table(&nodes_, kGroupsInFull) + str("nodes: ", nodes_.summary(), "\n");
}

std::string ParallelContext::tp_span_warning() const {
  std::vector<std::string> crossing;
  for (const std::vector<int>& group : layout_.groups(Axis::kTp)) {
    if (nodes_.spans_nodes(group)) {
      crossing.push_back(str(format_group(group), " (", nodes_.describe(group), ")"));
    }
  }
  if (crossing.empty()) return "";
  return str("tensor-parallel group(s) ", join(crossing, ", "),
             " span nodes: every layer's tp collectives cross the slow inter-node link. It works, "
             "but slowly; keep tp within a node: parallel.tensor <= ranks per node (",
             nodes_.ranks_on(nodes_.node_of(rank())).size(),
             " here) and tp fastest in parallel.order (tp-dp-pp), with each node's ranks "
             "numbered consecutively (the launchers' default)");
}

void ParallelContext::build_dp_gradients() {
  const Hierarchical mode = dp_gradient_mode_;
  // The ranks gradients are averaged over: dp, or dp x cp under context parallelism.
  std::vector<int> members;
  for (const auto& group : layout_.replica_groups()) {
    if (std::find(group.begin(), group.end(), rank()) != group.end()) members = group;
  }
  std::vector<int> node_of_member;
  for (int r : members) node_of_member.push_back(nodes_.node_of(r));
  const std::vector<int> spanned = nodes_.nodes_of(members);
  const int per_node = nodes_.even_share(members);  // 0: unequal
  const bool even = per_node > 0;
  // Every rank of the dp group sees the same members and nodes, so all decide alike (and build
  // the sub-communicators together).
  bool use = false;
  const bool leader = mode == Hierarchical::kLeader;
  if (mode == Hierarchical::kTrue || leader) {
    use = true;  // unequal counts are refused by the communicator, naming them
    dp_choice_ = str("ddp.hierarchical: ", mode);
  } else if (mode == Hierarchical::kAuto) {
    use = spanned.size() > 1 && even && per_node >= 2;
    const char* group = layout_.cp_size() > 1 ? "the dp x cp group" : "the dp group";
    dp_choice_ = use ? str("ddp.hierarchical: auto, ", group, " spans ", spanned.size(),
                           " nodes with ", per_node, " ranks on each")
                     : str("ddp.hierarchical: auto, flat (", group, " ",
                           spanned.size() == 1 ? "is inside one node"
                           : !even             ? "has unequal ranks per node"
                                               : "has one rank per node",
                           ")");
  } else {
    dp_choice_ = "ddp.hierarchical: false";
  }
  if (!use) return;
  dp_gradients_ = std::make_unique<HierarchicalCommunicator>(
      replica(), node_of_member,
      leader ? HierarchicalCommunicator::Scheme::kLeader
             : HierarchicalCommunicator::Scheme::kScatter);
  dp_choice_ += leader ? str(" -> all-reduce in node, all-reduce across ", spanned.size(),
                             " node(s) among node leaders, broadcast in node")
                       : str(" -> reduce-scatter in node, all-reduce across ", spanned.size(),
                             " node(s), all-gather in node");
}

int ParallelContext::prev_stage_rank() const {
  if (is_first_stage()) return -1;
  return layout_.rank_of(RankCoord{coord_.dp, coord_.tp, coord_.pp - 1, coord_.cp});
}

int ParallelContext::next_stage_rank() const {
  if (is_last_stage()) return -1;
  return layout_.rank_of(RankCoord{coord_.dp, coord_.tp, coord_.pp + 1, coord_.cp});
}

std::string ParallelContext::prefix() const {
  return str("[rank ", rank(), " dp", coord_.dp,
             layout_.cp_size() > 1 ? str(" cp", coord_.cp) : std::string(), " tp", coord_.tp, " pp",
             coord_.pp, "]");
}

}  // namespace triax
