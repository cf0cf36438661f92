// defines: triax::ParameterGate
//
// ZeRO-3 (ddp.shard: parameters, FSDP): between uses a rank holds only its slice of each
// parameter; a model asks for a unit of its parameters (the embedding, one block, the final norm
// and head) to be whole before it computes with them, and says when it is done. The model knows
// where its units begin and end; the data-parallel sync (distributed_data_parallel.h) owns the
// slices and the collectives. A model without a gate (every other level) holds whole parameters.
//
// The protocol of one unit's forward, as TransformerImpl follows it:
//   enter(u, u + 1);  y = unit(x);  leave(u, y, u - 1);
// enter() returns with the unit whole (gathered, or prefetched and waited for) and starts
// gathering the next unit; leave() hooks y so that the unit is whole again before its backward
// runs (y's gradient arrives before the unit's backward starts), then frees it unless told to
// keep it until backward (ddp.reshard_after_forward: false). A unit is freed after backward when
// every gradient of it has been sent (its buckets' reduce-scatters), unless told to keep it until
// the step ends (ddp.reshard_after_backward: false). Outside training (no gradient) leave() frees
// it at once.
#pragma once

#include <torch/torch.h>

namespace triax {

class ParameterGate {
 public:
  virtual ~ParameterGate() = default;
  /// Before unit `unit`'s forward: its parameters are whole when this returns; `prefetch` (the
  /// unit the forward reaches next, or -1) starts gathering beside this unit's compute.
  virtual void enter(int unit, int prefetch) = 0;
  /// After unit `unit`'s forward produced `output` (from which its backward starts); `prefetch`
  /// is the unit whose backward comes next (-1: none), gathered beside this one's backward.
  virtual void leave(int unit, const torch::Tensor& output, int prefetch) = 0;
  /// Midway through a unit's compute: lets the gathers in flight advance. MPI moves a posted
  /// collective only inside MPI calls, so a prefetch started at enter() would otherwise wait for
  /// the next enter() to make any progress. Cheap (a test of each request in flight).
  virtual void progress() {}
};

}  // namespace triax
