#include "job/stop_signal.h"

#include <pthread.h>
#include <signal.h>

#include <csignal>

#include "core/fault_point.h"
#include "core/flight_recorder.h"

namespace triax {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void record_signal(int signal) {
  received = signal;
  end_stalls();  // tests only: a held rank goes on to stop (Note [Fault injection])
}

}  // namespace

void install_stop_signals() {
  std::signal(SIGTERM, record_signal);
  std::signal(SIGUSR1, record_signal);
  // The supervisor (tools/rank_supervisor.cpp) started this process with both blocked, so that
  // one sent while LibTorch loaded waits: now it is recorded.
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);
}

int stop_signal_received() {
  return received;
}

int agree_on_stop_signal(Communicator& world, bool* flag) {
  // A test's missing collective (Note [Fault injection]): this rank skips the agreement.
  if (fault_due("skip-collective")) return 0;
  const flight::Label label("stop-signal agreement");
  // Ranks may get a stop signal at different moments (or only some of them): agree on it.
  torch::Tensor stop = torch::tensor(
      {static_cast<double>(received), flag != nullptr && *flag ? 1.0 : 0.0}, torch::kDouble);
  world.all_reduce(stop, ReduceOp::kMax);
  if (flag != nullptr) *flag = stop[1].item<double>() > 0;
  return static_cast<int>(stop[0].item<double>());
}

}  // namespace triax
