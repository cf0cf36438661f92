// defines: triax::PlacementShape, triax::placement_shape, triax::StagePlacement
//
// Which pipeline stage each rank's chunk holds, decided once from the schedule. With p ranks and
// v chunks per rank the model is cut into p*v stages. Loop placement (GPipe, 1F1B, interleaved,
// ZB-H1): chunk c of rank r is stage c*p + r. V placement (ZB-V): even chunks run down the ranks
// and odd chunks back up, so chunk c of rank r is stage c*p + r for even c and c*p + p-1-r for
// odd c; with v = 2 rank 0 holds the first and the last stage. Training, evaluation, generation,
// the tied embedding's sum and checkpoints (whose manifest records the schedule) all ask a
// StagePlacement; nothing else knows the V.
#pragma once

#include "core/config_choices.h"

namespace triax {

enum class PlacementShape { kLoop, kV };

/// How schedule.name `kind` places chunks: ZB-V in a V, the others in a loop.
inline PlacementShape placement_shape(ScheduleKind kind) {
  return kind == ScheduleKind::kZbv ? PlacementShape::kV : PlacementShape::kLoop;
}

class StagePlacement {
 public:
  StagePlacement(PlacementShape shape, int ranks, int chunks)
      : shape_(shape), ranks_(ranks), chunks_(chunks) {}
  /// `chunks` per rank on `ranks` pipeline ranks, as schedule `kind` places them.
  static StagePlacement of(ScheduleKind kind, int ranks, int chunks) {
    return StagePlacement(placement_shape(kind), ranks, chunks);
  }

  int stage_of(int rank, int chunk) const {
    return chunk * ranks_ + (odd_turned(chunk) ? ranks_ - 1 - rank : rank);
  }
  int rank_of(int stage) const {
    const int chunk = stage / ranks_, position = stage % ranks_;
    return odd_turned(chunk) ? ranks_ - 1 - position : position;
  }
  /// The first and the last stage on one rank (one pipeline rank, or a V): a tied embedding's
  /// two copies are summed there, with no communication.
  bool ends_on_one_rank() const { return rank_of(0) == rank_of(stages() - 1); }
  /// "in a V" or "in a loop", for messages.
  const char* describe() const { return shape_ == PlacementShape::kV ? "in a V" : "in a loop"; }

  PlacementShape shape() const { return shape_; }
  int ranks() const { return ranks_; }
  int chunks() const { return chunks_; }
  int stages() const { return ranks_ * chunks_; }
  bool operator==(const StagePlacement& o) const {
    return shape_ == o.shape_ && ranks_ == o.ranks_ && chunks_ == o.chunks_;
  }

 private:
  bool odd_turned(int chunk) const { return shape_ == PlacementShape::kV && chunk % 2 == 1; }

  PlacementShape shape_;
  int ranks_;
  int chunks_;
};

}  // namespace triax
