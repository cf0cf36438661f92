// defines: triax::check_run_dir_free, triax::RunDirLock
//
// One run.dir, one running job. A second job started on the folder a running job writes would
// interleave its records into the first job's metrics.jsonl (one unparsable line, two runs'
// curves mixed) and replace its flight records. The running job's rank 0 holds an exclusive
// flock(2) on run.dir/.triax.lock for its whole life (the kernel drops it when the process ends,
// however it ends, so a crashed job never leaves the folder locked) and writes its pid, host and
// start time into it. Every rank of a new job tests for that lock before it writes anything
// (pre-communication, on every rank: each prints the refusal itself); its rank 0 takes the lock
// once the world exists (every rank has finished its test by then).
#pragma once

#include <string>

namespace triax {

/// Throws ConfigError naming run.dir and the job holding it ("pid P on HOST since TIME") when a
/// running job holds `lock_path`; nothing otherwise (or when `lock_path` is empty).
void check_run_dir_free(const std::string& lock_path);

/// Holds the lock for this process's life (rank 0). Throws ConfigError as check_run_dir_free
/// when another job took it meanwhile.
class RunDirLock {
 public:
  RunDirLock() = default;
  explicit RunDirLock(const std::string& lock_path);
  ~RunDirLock();
  RunDirLock(RunDirLock&& other) noexcept;
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace triax
