#include "schedules/action_memory.h"

namespace triax {

ActionMemory action_memory(ActionKind kind) {
  ActionMemory m;
  switch (kind) {
    case ActionKind::kForward:
      m.micro_batches = 1;
      break;
    case ActionKind::kBackward:
      m.micro_batches = -1;
      m.backward = true;
      break;
    case ActionKind::kBackwardInput:
      m.deferred = 1;
      m.backward = true;
      break;
    case ActionKind::kBackwardWeight:
      m.micro_batches = -1;
      m.deferred = -1;
      break;
    case ActionKind::kSendActivation:
    case ActionKind::kSendGrad:
      m.sends = true;
      break;
    case ActionKind::kRecvActivation:
    case ActionKind::kRecvGrad:
      break;
  }
  return m;
}

}  // namespace triax
