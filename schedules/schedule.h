// defines: triax::ActionKind, triax::Action, triax::Schedule, triax::make_schedule,
//          triax::gpipe, triax::one_f_one_b, triax::interleaved_one_f_one_b,
//          triax::zero_bubble_h1, triax::zero_bubble_v, triax::forward_only
//
// A pipeline schedule is data: for each rank, the ordered list of what it does. Nothing here
// communicates, so a schedule can be printed, checked and costed before it runs.
//
// Stages: the model is cut into p * v chunks (stages) s = 0 .. p*v-1; rank r holds chunks
// c = 0 .. v-1, which are stages s = c * p + r (loop placement; v = 1: stage = rank) or, for
// ZB-V, a V (schedules/stage_placement.h). A micro-batch's activation flows s -> s+1 in forward,
// its gradient s+1 -> s in backward. A backward is either one action (B) or, in the zero-bubble
// schedules, two: I, the input gradient (on the critical path to the previous stage), and W, the
// weight gradients, which the schedule places later to fill what would be idle time
// (schedules/split_backward.h). Communication actions are derived from the compute order: a forward
// of stage s > 0 is preceded by a receive of its activation, and followed (s < last) by a send; a
// backward (B or I) of stage s < last is preceded by a receive of its gradient, and followed (s >
// 0) by a send. W communicates nothing. Sends never block (they are completed at the end of the
// step), so only receives wait. A message between two stages on the same rank (ZB-V's turn) stays
// local.
#pragma once

#include <string>
#include <vector>

#include "core/config_choices.h"
#include "schedules/stage_placement.h"

namespace triax {

enum class ActionKind {
  kForward,
  kBackward,        ///< the whole backward (B)
  kBackwardInput,   ///< the input gradient only (I); its W follows later
  kBackwardWeight,  ///< the weight gradients of an earlier I (W)
  kSendActivation,
  kRecvActivation,
  kSendGrad,
  kRecvGrad
};

/// True for F, B, I and W (the actions that compute).
bool is_compute(ActionKind kind);

/// "F", "B", "I", "W", "sendA", "recvA", "sendG", "recvG" (torch.distributed.pipelining's
/// letters).
const char* action_name(ActionKind kind);

struct Action {
  ActionKind kind = ActionKind::kForward;
  int chunk = 0;       ///< this rank's chunk (0 .. v-1)
  int microbatch = 0;  ///< 0 .. m-1
  int peer = -1;       ///< pipeline rank of the other side (communication only)
  bool operator==(const Action& other) const {
    return kind == other.kind && chunk == other.chunk && microbatch == other.microbatch &&
           peer == other.peer;
  }
};

struct Schedule {
  std::string name;
  int stages = 1;                                ///< pipeline ranks p
  int microbatches = 1;                          ///< m
  int chunks = 1;                                ///< chunks per rank v
  std::vector<std::vector<Action>> ranks;        ///< per pipeline rank, in order
  bool backward = true;                          ///< false: forwards only (evaluation, generation)
  PlacementShape shape = PlacementShape::kLoop;  ///< how chunks are placed (set with the actions)
  /// Per rank, the most (chunk, micro-batch) activations the schedule claims to hold at once
  /// (check_schedule verifies it); empty: no claim.
  std::vector<int> in_flight_bound;

  StagePlacement placement() const { return StagePlacement(shape, stages, chunks); }
  int stage_of(int rank, int chunk) const { return placement().stage_of(rank, chunk); }
  int rank_of(int stage) const { return placement().rank_of(stage); }
  /// The rank computing the loss (the last stage's).
  int loss_rank() const { return rank_of(total_stages() - 1); }
  bool operator==(const Schedule& other) const {
    return name == other.name && stages == other.stages && microbatches == other.microbatches &&
           chunks == other.chunks && ranks == other.ranks && backward == other.backward &&
           shape == other.shape && in_flight_bound == other.in_flight_bound;
  }
  int total_stages() const { return stages * chunks; }
  /// Rank x time-slot table of the compute actions ("F0" = forward of micro-batch 0, "B1c1" =
  /// backward of micro-batch 1 on chunk 1, "I2"/"W2" its two halves), one line per rank.
  std::string table() const;
};

/// All forwards, then all backwards (activations of all m micro-batches held at once).
Schedule gpipe(int stages, int microbatches);
/// PipeDream-flush: p - r - 1 warm-up forwards, then one forward / one backward, then cool-down.
Schedule one_f_one_b(int stages, int microbatches);
/// Megatron's interleaved 1F1B with v chunks per rank; needs m % p == 0 and v >= 2.
Schedule interleaved_one_f_one_b(int stages, int microbatches, int chunks);

/// ZB-H1 (Qi et al., arXiv 2401.10241): 1F1B's order of forwards and input gradients, with rank r
/// deferring up to r weight passes, which fill the cool-down. Peak in-flight micro-batches p on
/// every rank (1F1B's peak); idle time (p-1)(T_F + T_I - T_W) against 1F1B's (p-1)(T_F + T_B).
Schedule zero_bubble_h1(int stages, int microbatches);
/// ZB-V: two chunks per rank in a V (rank 0 holds the first and the last stage), ordered by a
/// list scheduler at unit costs (input gradients first, then forwards while fewer than 2p chunk
/// micro-batches are in flight — 1F1B's activation memory, each chunk being half a stage —
/// then weight passes). At unit costs it reaches the least possible makespan, 6m + p - 1 chunk
/// forwards: the only idle time is each rank's wait for its first input.
Schedule zero_bubble_v(int stages, int microbatches);

/// Forwards only, for evaluation and generation: each rank runs its chunks in order, every
/// micro-batch of a chunk before the next chunk (stage order, so it cannot deadlock), placed as
/// the training schedule places them (`placement`: Schedule::placement()).
Schedule forward_only(const StagePlacement& placement, int microbatches);

/// schedule.name's schedule; throws ConfigError naming schedule.* keys when the
/// combination is not supported.
Schedule make_schedule(ScheduleKind kind, int stages, int microbatches, int chunks);
/// The same by YAML spelling (benchmarks, tests); throws ConfigError for an unknown name.
Schedule make_schedule(const std::string& name, int stages, int microbatches, int chunks);

/// Inserts the send/receive actions implied by each rank's compute order (see above), its
/// stages placed by `placement`.
Schedule with_communication(const std::string& name, const StagePlacement& placement,
                            int microbatches, const std::vector<std::vector<Action>>& compute);

}  // namespace triax
