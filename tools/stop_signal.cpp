#include "tools/stop_signal.h"

#include <csignal>

namespace triax {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void record_signal(int signal) {
  received = signal;
}

}  // namespace

void install_stop_signals() {
  std::signal(SIGTERM, record_signal);
  std::signal(SIGUSR1, record_signal);
}

int stop_signal_received() {
  return received;
}

}  // namespace triax
