// defines: triax::start_death_watch, triax::death_watch_done
//
// Names a rank that dies without a word. When a process is killed (kill -9, a segfault, the OOM
// killer, a lost node), mpirun ends the whole job within a second — and the box it prints may
// name another process's PID. Nothing in the dead rank can report, and its peers are killed
// before they time out. So each rank starts, before MPI, a small watcher process (its own
// session, holding nothing of the job but one pipe): when the pipe closes without the rank first
// saying "done", the rank ended abnormally; the watcher records when, waits for the others'
// watchers, and the watcher of the rank that ended first writes
//   run.dir/flight/died.txt: "rank R (pid P on HOST) ended first, without a word, at T ..."
// which `triax flight RUN_DIR` prints. A rank that reports its own error, or finishes, says
// "done" first (death_watch_done), so it is never blamed.
#pragma once

#include <string>

#include "core/run_paths.h"

namespace triax {

/// Starts the watcher of this rank (its marks and died.txt go where `paths` says; none without
/// a run.dir).
void start_death_watch(int rank, const RunPaths& paths);
/// This rank is ending on purpose (finished, or reported its own error).
void death_watch_done();

}  // namespace triax
