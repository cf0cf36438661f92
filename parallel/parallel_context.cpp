#include "parallel/parallel_context.h"

#include <algorithm>

#include "core/error.h"

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

// Splits `world` into `groups` and names this rank's group (for flight records and timeouts).
std::unique_ptr<Communicator> split_named(Communicator& world, const RankGroups& groups,
                                          const char* name) {
  const int color = color_of(groups, world.rank());
  std::unique_ptr<Communicator> group = world.split(color, world.rank());
  if (group) {
    std::vector<int> members = groups[static_cast<size_t>(color)];
    std::sort(members.begin(), members.end());  // split key = global rank
    group->set_label(name, members);
  }
  return group;
}

}  // namespace

ParallelContext::ParallelContext(std::shared_ptr<Communicator> world, ParallelLayout layout)
    : world_(std::move(world)), layout_(std::move(layout)) {
  TRIAX_CHECK(world_ != nullptr, "ParallelContext needs a world communicator");
  TRIAX_CHECK(world_->size() == layout_.world_size(), "the world communicator has ", world_->size(),
              " ranks but the layout is for ", layout_.world_size());
  coord_ = layout_.coord_of(world_->rank());
  // Key = global rank: within every group, ranks ascend with the group's own coordinate, so the
  // sub-communicator's rank equals this rank's coordinate on that axis.
  std::vector<int> everyone(static_cast<size_t>(world_->size()));
  for (int k = 0; k < world_->size(); ++k) everyone[static_cast<size_t>(k)] = k;
  world_->set_label("world", everyone);
  tp_ = split_named(*world_, layout_.groups(Axis::kTp), "tp");
  dp_ = split_named(*world_, layout_.groups(Axis::kDp), "dp");
  pp_ = split_named(*world_, layout_.groups(Axis::kPp), "pp");
  model_parallel_ = split_named(*world_, layout_.model_parallel_groups(), "model-parallel");
  embedding_ = split_named(*world_, layout_.embedding_groups(), "embedding");
  TRIAX_CHECK(tp_->rank() == coord_.tp && dp_->rank() == coord_.dp && pp_->rank() == coord_.pp,
              "sub-communicator ranks disagree with the layout");
}

int ParallelContext::prev_stage_rank() const {
  if (is_first_stage()) return -1;
  return layout_.rank_of(RankCoord{coord_.dp, coord_.tp, coord_.pp - 1});
}

int ParallelContext::next_stage_rank() const {
  if (is_last_stage()) return -1;
  return layout_.rank_of(RankCoord{coord_.dp, coord_.tp, coord_.pp + 1});
}

std::string ParallelContext::prefix() const {
  return str("[rank ", rank(), " dp", coord_.dp, " tp", coord_.tp, " pp", coord_.pp, "]");
}

}  // namespace triax
