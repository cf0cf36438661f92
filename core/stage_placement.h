// defines: triax::v_shaped, triax::stage_of_chunk, triax::rank_of_stage
//
// Which pipeline stage each rank's chunk holds. With p ranks and v chunks per rank the model is
// cut into p*v stages. Loop placement (GPipe, 1F1B, interleaved): chunk c of rank r is stage
// c*p + r. V placement (ZB-V): even chunks run down the ranks and odd chunks back up, so chunk
// c of rank r is stage c*p + r for even c and c*p + p-1-r for odd c; with v = 2 rank 0 holds the
// first and the last stage. Training, evaluation and checkpoints all place stages this way (the
// manifest records which), so one function answers it everywhere.
#pragma once

#include "core/config_choices.h"

namespace triax {

/// True for the schedules that place chunks in a V (schedule.name: zbv).
inline bool v_shaped(ScheduleKind kind) {
  return kind == ScheduleKind::kZbv;
}

inline int stage_of_chunk(int rank, int chunk, int ranks, bool v) {
  return chunk * ranks + (v && chunk % 2 == 1 ? ranks - 1 - rank : rank);
}

inline int rank_of_stage(int stage, int ranks, bool v) {
  const int chunk = stage / ranks, position = stage % ranks;
  return v && chunk % 2 == 1 ? ranks - 1 - position : position;
}

}  // namespace triax
