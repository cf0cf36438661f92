// defines: triax::fault_point, triax::fault_due, triax::inject_step_fault, triax::stall_point,
//          triax::end_stalls
//
// Note [Fault injection]: faults on purpose, for tests; unset (always, outside tests) each check
// is one getenv.
//  - `TRIAX_KILL_AT=NAME:STEP` makes the process SIGKILL itself when it reaches fault point NAME
//    at STEP, as kill -9 or a node failure would at exactly that moment (used to prove that a
//    save interrupted between any two of its writes leaves the previous checkpoint loadable).
//  - `TRIAX_FAULT=KIND:RANK:STEP` makes world rank RANK misbehave at optimizer step STEP:
//      stop             raise SIGSTOP before the step (a stalled node, a debugger)
//      kill             raise SIGKILL before the step (a crashed process)
//      exit             exit(3) before the step without a word
//      error            throw an error before the step (a bug on one rank)
//      skip-send        drop the step's first pipeline send (a lost message)
//      skip-collective  leave out the step's stop-signal agreement (a collective one rank skips)
//    The rank and step come from the flight recorder (flight::set_rank / set_step).
//  - `TRIAX_STALL=NAME:SECONDS[:RANK[:STEP]]` makes the process (or only world rank RANK, at
//    STEP: the step a checkpoint is of) sleep that long at stall point NAME, each time: a slow disk
//    or file system (a live rank that is merely slow must not be declared lost). Stall points:
//      checkpoint-shard  before a rank writes its shard (STEP: the step the checkpoint is of)
//      step              before the optimizer step STEP: a rank held at a step, e.g. so that a
//                        test can let a node join an elastic job while the run is at that step
//    A stop signal (SIGTERM/SIGUSR1, job/stop_signal.h) ends every stall at once, as it would
//    end a test's wait: the rank then goes on and stops as it always does.
#pragma once

#include <cstdint>

namespace triax {

void fault_point(const char* name, int64_t step);

/// True once, when TRIAX_FAULT names `kind` for this rank and the current step.
bool fault_due(const char* kind);

/// Sleeps when TRIAX_STALL names `name` (and this rank, and `step`).
void stall_point(const char* name, int64_t step);

/// Ends the current and every later stall; async-signal-safe (called by the stop-signal handler).
void end_stalls();

/// Acts out stop, kill, exit or error when due (called at the start of each step).
void inject_step_fault();

}  // namespace triax
