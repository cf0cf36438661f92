// defines: triax::fault_point
//
// Fault injection for crash tests: `TRIAX_KILL_AT=NAME:STEP` makes the process SIGKILL itself
// when it reaches fault point NAME at STEP, as kill -9 or a node failure would at exactly that
// moment. Unset (always, outside tests), a fault point is one getenv. Used to prove that a save
// interrupted between any two of its writes leaves the previous checkpoint loadable.
#pragma once

#include <cstdint>

namespace triax {

void fault_point(const char* name, int64_t step);

}  // namespace triax
