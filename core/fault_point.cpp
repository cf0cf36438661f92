#include "core/fault_point.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/strings.h"

namespace triax {
namespace {

// Set from a signal handler: a lock-free atomic store is async-signal-safe.
std::atomic<bool> stalls_ended{false};
static_assert(std::atomic<bool>::is_always_lock_free);

}  // namespace

void fault_point(const char* name, int64_t step) {
  const char* target = std::getenv("TRIAX_KILL_AT");
  if (target == nullptr || std::string(target) != std::string(name) + ":" + std::to_string(step)) {
    return;
  }
  std::fprintf(stderr, "fault point %s:%lld: killing this process (TRIAX_KILL_AT)\n", name,
               static_cast<long long>(step));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

bool fault_due(const char* kind) {
  static bool fired = false;
  const char* spec = std::getenv("TRIAX_FAULT");
  if (spec == nullptr || fired) return false;
  const std::vector<std::string> parts = split(spec, ':');
  if (parts.size() != 3 || parts[0] != kind) return false;
  if (std::atoi(parts[1].c_str()) != flight::rank() ||
      std::atoll(parts[2].c_str()) != flight::step()) {
    return false;
  }
  fired = true;
  // The Unix time lets a test measure how long the job takes to end from the fault itself, not
  // from a launch whose start-up time depends on the launcher and the machine's load.
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(stderr,
               "[rank %d] fault injection: %s at step %lld, at %.3f (Unix time) (TRIAX_FAULT)\n",
               flight::rank(), kind, static_cast<long long>(flight::step()), now);
  std::fflush(stderr);
  return true;
}

void stall_point(const char* name, int64_t step) {
  const char* spec = std::getenv("TRIAX_STALL");
  if (spec == nullptr) return;
  const std::vector<std::string> parts = split(spec, ':');
  if (parts.size() < 2 || parts[0] != name) return;
  if (parts.size() > 2 && std::atoi(parts[2].c_str()) != flight::rank()) return;
  if (parts.size() > 3 && std::atoll(parts[3].c_str()) != step) return;
  const double seconds = std::atof(parts[1].c_str());
  std::fprintf(stderr, "[rank %d] stall point %s: sleeping %.0f s (TRIAX_STALL)\n", flight::rank(),
               name, seconds);
  std::fflush(stderr);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until && !stalls_ended.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (stalls_ended.load()) {
    std::fprintf(stderr, "[rank %d] stall point %s: ended early by a stop signal\n", flight::rank(),
                 name);
  }
}

void end_stalls() {
  stalls_ended.store(true);
}

void inject_step_fault() {
  if (std::getenv("TRIAX_FAULT") == nullptr) return;
  if (fault_due("stop")) std::raise(SIGSTOP);
  if (fault_due("kill")) std::raise(SIGKILL);
  if (fault_due("exit")) std::_Exit(3);
  if (fault_due("error")) throw Error(str("injected error on rank ", flight::rank()));
}

}  // namespace triax
