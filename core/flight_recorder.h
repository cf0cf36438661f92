// defines: triax::flight (begin, end, Label, set_step, set_rank, describe_pending, dump, ...)
//
// A flight recorder: each rank keeps its last kCapacity communication and pipeline actions (kind,
// group, peer, bytes, tag, the group's collective sequence number, step, micro-batch, what it
// was for, start and end time) in a ring buffer. Cheap enough to be always on (a mutex and a few
// stores per operation; a step posts tens to hundreds). When the job ends badly — a wait that
// exceeds comm.timeout_s, a fatal error, or SIGUSR2 — each rank writes its buffer to
// run.dir/flight/rank_R.json, and `triax flight RUN_DIR` reads them all to say which rank is
// behind and where the pipeline is stuck (docs/reliability.md).
//
// File layout (JSON; one event per line so that a line-based reader can also use it):
//   {"rank": R, "world_size": N, "reason": "...", "step": S, "now_s": T,
//    "last": "the pending or last action, described",
//    "events": [
//     {"id": I, "kind": "all-reduce", "group": "dp [0,2]", "peer": -1, "tag": -1, "bytes": B,
//      "seq": Q, "step": S, "microbatch": M, "what": "DDP bucket 3", "start_s": T0,
//      "end_s": T1 (-1 while pending)},
//     ...]}
#pragma once

#include <cstdint>
#include <string>

namespace triax::flight {

constexpr int kCapacity = 512;

struct Event {
  const char* kind = "";  ///< "all-reduce", "send", "recv", "barrier", ...
  std::string group;      ///< "dp [0,2]": the group's name and world ranks
  int peer = -1;          ///< world rank of the peer (point-to-point), else -1
  int tag = -1;
  int64_t bytes = 0;
  int64_t seq = -1;  ///< n-th collective on its group (point-to-point: -1)
};

/// Records the start of an operation (step, micro-batch and label taken from this thread's
/// context); returns its id.
uint64_t begin(const Event& event);
/// Records its completion.
void end(uint64_t id);

/// Operations posted while a Label lives are described by it ("DDP bucket 3 (1.0 MiB)").
class Label {
 public:
  explicit Label(std::string what);
  ~Label();
  Label(const Label&) = delete;
  Label& operator=(const Label&) = delete;

 private:
  std::string previous_;
};

void set_step(int64_t step);  ///< the optimizer step being run (1-based)
void set_microbatch(int microbatch);
void set_rank(int rank, int world_size);
int rank();
int64_t step();
/// Where dump() writes: DIR/rank_R.json ("" = nowhere).
void set_dump_dir(const std::string& dir);

/// "all-reduce of DDP bucket 3 over dp [0,2] (4.0 MiB), step 7, micro-batch 2".
std::string describe(uint64_t id);
/// The pending action ("waiting: recv of ...") or else the last one ("done: ..."), as a dump's
/// "last" field says; from any thread.
std::string last_action();
/// Writes the buffer (atomically); returns the path, or "" when no dump dir is set.
std::string dump(const std::string& reason);
/// The path dump() writes for `rank`.
std::string dump_path(int rank);

/// Every rank's last action, one line each, from the dumps in the dump dir (a rank without a
/// dump is marked as the suspect: stopped, killed, or still waiting).
std::string summary(int world_size);

/// SIGUSR2 asks for a dump; waits call poll_dump_request() so it is honoured even while stuck.
void install_dump_signal();
void poll_dump_request();

/// Set once a timeout has fired: pending operations are abandoned, not waited for again.
void set_abandoning();
bool abandoning();
/// Tests only: back to normal after a test that timed out on purpose.
void clear_abandoning();

}  // namespace triax::flight
