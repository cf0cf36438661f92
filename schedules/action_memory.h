// defines: triax::ActionMemory, triax::action_memory
//
// What each pipeline action does to what its rank holds, said once for the three places that
// follow a rank's program through a step: the executor (which holds the tensors and counts the
// micro-batches it holds), the simulator (which counts them: SimulationResult::peak_activations)
// and the planner (which adds their bytes: plan/predict.cpp).
//   F  a micro-batch's activations start being held (the stage's input and what its forward kept)
//   B  ... are released after its whole backward; a recomputed block replays during it
//   I  the input gradient: the micro-batch stays held (W needs the graph) and the output
//      gradients of every weight-consuming operation are captured until W; replay as B
//   W  the weight gradients: the micro-batch and what I captured are released
//   a send  its buffer lives until the step ends (the executor completes sends then)
//   a receive  its tensor becomes the stage's input, counted with F's micro-batch
#pragma once

#include "schedules/schedule.h"

namespace triax {

struct ActionMemory {
  int micro_batches = 0;  ///< +1 a micro-batch becomes held, -1 one is released
  int deferred = 0;       ///< +1 I's captured gradients become held, -1 W releases them
  bool backward = false;  ///< a backward pass runs (B or I): a recomputed block's replay
  bool sends = false;     ///< a message buffer that lives until the step ends
};

ActionMemory action_memory(ActionKind kind);

}  // namespace triax
