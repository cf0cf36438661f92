// defines: triax::ParallelContext
//
// A ParallelLayout made real: this rank's coordinates and one sub-communicator per group it
// belongs to (TP, DP, PP, model-parallel, and the embedding group of the first and last pipeline
// stages). Built collectively by every rank of `world`, after the layout has been validated.
#pragma once

#include <memory>
#include <string>

#include "parallel/comm/communicator.h"
#include "parallel/parallel_layout.h"

namespace triax {

class ParallelContext {
 public:
  /// Collective over `world`; world->size() must equal layout.world_size().
  ParallelContext(std::shared_ptr<Communicator> world, ParallelLayout layout);

  const ParallelLayout& layout() const { return layout_; }
  int rank() const { return world_->rank(); }
  int world_size() const { return world_->size(); }
  const RankCoord& coord() const { return coord_; }
  int dp_rank() const { return coord_.dp; }
  int tp_rank() const { return coord_.tp; }
  int pp_rank() const { return coord_.pp; }
  int dp_size() const { return layout_.dp_size(); }
  int tp_size() const { return layout_.tp_size(); }
  int pp_size() const { return layout_.pp_size(); }

  Communicator& world() { return *world_; }
  Communicator& tp() { return *tp_; }
  Communicator& dp() { return *dp_; }
  Communicator& pp() { return *pp_; }
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

 private:
  std::shared_ptr<Communicator> world_;
  ParallelLayout layout_;
  RankCoord coord_;
  std::unique_ptr<Communicator> tp_, dp_, pp_, model_parallel_, embedding_;
};

}  // namespace triax
