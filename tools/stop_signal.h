// defines: triax::install_stop_signals, triax::stop_signal_received
//
// SIGTERM and SIGUSR1 are how a scheduler says "you are about to be stopped" (Slurm sends them
// before a preemption or the time limit with --signal). The handler only records the signal;
// the training loop agrees on it across ranks after each step (a max all-reduce: ranks may
// receive it at different moments, or only some of them), saves a checkpoint and exits 0.
#pragma once

namespace triax {

void install_stop_signals();
/// The signal received (SIGTERM or SIGUSR1), or 0.
int stop_signal_received();

}  // namespace triax
