// defines: triax::hold_signal, triax::ask_supervisor_to_hold
//
// The signal by which triax-core asks its supervisor (tools/rank_supervisor.cpp) to hold on when
// triax-core is killed, instead of dying the same way at once: a job that goes on without a
// lost rank (asynchronous parameter servers drop a lost worker: job/heartbeat.h) must not let
// the launcher see a process end, or hydra and srun end the whole job. Header-only: the
// supervisor is a small static program without the project's libraries.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace triax {

inline int hold_signal() {
  return SIGRTMIN + 3;
}

/// Asks the supervisor that started this process to hold on if this process is killed; false
/// when there is none (started directly, or the supervisor stepped aside across nodes).
/// TRIAX_SUPERVISOR is "PID:SIGNAL" (the supervisor's pid and its hold_signal()).
inline bool ask_supervisor_to_hold() {
  const char* supervisor = std::getenv("TRIAX_SUPERVISOR");
  if (supervisor == nullptr) return false;
  char* rest = nullptr;
  const pid_t pid = static_cast<pid_t>(std::strtol(supervisor, &rest, 10));
  if (pid <= 1 || rest == nullptr || *rest != ':' || ::getppid() != pid) return false;
  const int signal = static_cast<int>(std::strtol(rest + 1, nullptr, 10));
  if (signal <= 0) return false;
  return ::kill(pid, signal) == 0;
}

}  // namespace triax
