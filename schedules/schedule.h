// defines: triax::ActionKind, triax::Action, triax::Schedule, triax::make_schedule,
//          triax::gpipe, triax::one_f_one_b, triax::interleaved_one_f_one_b,
//          triax::forward_only
//
// A pipeline schedule is data: for each rank, the ordered list of what it does. Nothing here
// communicates, so a schedule can be printed, checked and costed before it runs.
//
// Stages: the model is cut into p * v chunks (stages) s = 0 .. p*v-1; rank r holds chunks
// c = 0 .. v-1, which are stages s = c * p + r (v = 1: stage = rank). A micro-batch's
// activation flows s -> s+1 in forward, its gradient s+1 -> s in backward.
// Communication actions are derived from the compute order: a forward of stage s > 0 is
// preceded by a receive of its activation, and followed (s < last) by a send; a backward of
// stage s < last is preceded by a receive of its gradient, and followed (s > 0) by a send.
// Sends never block (they are completed at the end of the step), so only receives wait.
#pragma once

#include <string>
#include <vector>

#include "core/config_choices.h"

namespace triax {

enum class ActionKind {
  kForward,
  kBackward,
  kSendActivation,
  kRecvActivation,
  kSendGrad,
  kRecvGrad
};

/// "F", "B", "sendA", "recvA", "sendG", "recvG".
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
  int stages = 1;                          ///< pipeline ranks p
  int microbatches = 1;                    ///< m
  int chunks = 1;                          ///< chunks per rank v
  std::vector<std::vector<Action>> ranks;  ///< per pipeline rank, in order
  bool backward = true;                    ///< false: forwards only (evaluation, generation)

  int stage_of(int rank, int chunk) const { return chunk * stages + rank; }
  bool operator==(const Schedule& other) const {
    return name == other.name && stages == other.stages && microbatches == other.microbatches &&
           chunks == other.chunks && ranks == other.ranks && backward == other.backward;
  }
  int total_stages() const { return stages * chunks; }
  /// Rank x time-slot table of the compute actions ("F0" = forward of micro-batch 0, "B1c1" =
  /// backward of micro-batch 1 on chunk 1), one line per rank.
  std::string table() const;
};

/// All forwards, then all backwards (activations of all m micro-batches held at once).
Schedule gpipe(int stages, int microbatches);
/// PipeDream-flush: p - r - 1 warm-up forwards, then one forward / one backward, then cool-down.
Schedule one_f_one_b(int stages, int microbatches);
/// Megatron's interleaved 1F1B with v chunks per rank; needs m % p == 0 and v >= 2.
Schedule interleaved_one_f_one_b(int stages, int microbatches, int chunks);

/// Forwards only, for evaluation and generation: each rank runs its chunks in order, every
/// micro-batch of a chunk before the next chunk (stage order, so it cannot deadlock).
Schedule forward_only(int stages, int microbatches, int chunks);

/// schedule.name's schedule; throws ConfigError naming schedule.* keys when the
/// combination is not supported.
Schedule make_schedule(ScheduleKind kind, int stages, int microbatches, int chunks);
/// The same by YAML spelling (benchmarks, tests); throws ConfigError for an unknown name.
Schedule make_schedule(const std::string& name, int stages, int microbatches, int chunks);

/// Inserts the send/receive actions implied by each rank's compute order (see above).
Schedule with_communication(const std::string& name, int stages, int microbatches, int chunks,
                            const std::vector<std::vector<Action>>& compute);

}  // namespace triax
