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

}  // namespace

ParallelContext::ParallelContext(std::shared_ptr<Communicator> world, ParallelLayout layout)
    : world_(std::move(world)), layout_(std::move(layout)) {
  TRIAX_CHECK(world_ != nullptr, "ParallelContext needs a world communicator");
  TRIAX_CHECK(world_->size() == layout_.world_size(), "the world communicator has ", world_->size(),
              " ranks but the layout is for ", layout_.world_size());
  const int r = world_->rank();
  coord_ = layout_.coord_of(r);
  // Key = global rank: within every group, ranks ascend with the group's own coordinate, so the
  // sub-communicator's rank equals this rank's coordinate on that axis.
  tp_ = world_->split(color_of(layout_.groups(Axis::kTp), r), r);
  dp_ = world_->split(color_of(layout_.groups(Axis::kDp), r), r);
  pp_ = world_->split(color_of(layout_.groups(Axis::kPp), r), r);
  model_parallel_ = world_->split(color_of(layout_.model_parallel_groups(), r), r);
  embedding_ = world_->split(color_of(layout_.embedding_groups(), r), r);
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
