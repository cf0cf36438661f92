// defines: triax::install_stop_signals, triax::stop_signal_received, triax::agree_on_stop_signal
//
// SIGTERM and SIGUSR1 are how a scheduler says "you are about to be stopped" (Slurm sends them
// before a preemption or the time limit with --signal). The handler only records the signal;
// the training loop agrees on it across ranks after each step (a max all-reduce: ranks may
// receive it at different moments, or only some of them), saves a checkpoint and exits 0.
#pragma once

#include "parallel/comm/communicator.h"

namespace triax {

void install_stop_signals();
/// The signal received (SIGTERM or SIGUSR1), or 0.
int stop_signal_received();
/// The signal any rank of `world` received, on every rank (a max all-reduce), or 0. `flag`, when
/// given, rides along: true on return when it was true on any rank (an online re-layout's
/// request, seen by rank 0), so a step ends in one agreement.
int agree_on_stop_signal(Communicator& world, bool* flag = nullptr);

}  // namespace triax
