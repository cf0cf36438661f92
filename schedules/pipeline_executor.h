// defines: triax::PipelineExecutor, triax::StageFunctions, triax::TraceEvent
//
// Runs any checked schedule's action list on this rank's chunks. The model enters only through
// two functions, so this knows nothing of GPT:
//   forward(chunk, mb, input) -> output   (input is undefined on stage 0, which reads its batch)
//   loss(mb, output) -> scalar            (last stage only)
// Activations travel between pipeline ranks as [micro_batch, ...] tensors of a shape fixed by the
// config, so no handshake is needed; each message's tag encodes (receiving stage, micro-batch,
// kind), so messages of different chunks never mix. Sends are non-blocking and completed at the
// end of the step; only receives wait (see schedule.h), so no two ranks can block on each other's
// send.
// Each micro-batch's input and output are kept from its forward until its backward (B, or W
// after a split backward: W needs the graph I kept), then released. A message between two
// stages on this rank (ZB-V's turn at the V's bottom) is handed over without communication. The
// loss of each micro-batch (each unit, below) is scaled by 1/m (1/(m units)), so the accumulated
// gradients are those of the mean loss over the whole batch, unless the caller sums unscaled;
// the mean loss is returned on every pipeline rank.
//
// Note [Sample units]
// A micro-batch's weight gradient is one GEMM over its b x s tokens, whose association the BLAS
// picks by b: the same global batch cut into micro-batches of 2 or of 4 gives gradients that
// differ in the last bits. With StageFunctions::units = b each scheduled micro-batch runs as b
// units of one sample: b forwards of [1, ...] slices of the received activation (each its own
// autograd leaf), b losses, b backward passes (B, or I and W), each unit's gradients handed to
// the caller's hooks on their own, so the caller can add them in a tree over the global sample
// index (parallel/dp/microbatch_tree.h). Pipeline messages stay one per micro-batch (the units'
// outputs and input gradients concatenated): the schedule, its bubble and its p2p count are the
// micro-batch's; only the compute runs at one sample, and gives one sample's bits whatever b.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "parallel/comm/communicator.h"
#include "schedules/schedule.h"

namespace triax {

struct StageFunctions {
  std::function<torch::Tensor(int chunk, int microbatch, const torch::Tensor& input)> forward;
  std::function<torch::Tensor(int microbatch, const torch::Tensor& output)> loss;
  /// Optional: called before each backward action (B, I or W); `last` is true for the chunk's
  /// final one of its kind in the step — the final B, or the final I and the final W of a split
  /// backward — where data-parallel gradient sync should start.
  std::function<void(int chunk, int microbatch, bool last)> before_backward;
  /// Optional: after each W, the parameters whose gradients it completed (hooks on parameters do
  /// not see W: it adds to .grad itself; schedules/split_backward.h).
  std::function<void(int chunk, const std::vector<torch::Tensor>& params)> weights_ready;
  /// Optional: after each action that may have added parameter gradients — B, and both I (the
  /// parameters of recomputed blocks) and W of a split backward; `final` on the micro-batch's
  /// last one for the chunk (its B or its W). Layout-invariant numerics take each micro-batch's
  /// gradients out here (parallel/dp/microbatch_tree.h).
  std::function<void(int chunk, int microbatch, bool final)> after_backward;
  /// Backpropagate each micro-batch's loss unscaled (the gradients are then the sum over
  /// micro-batches, and the caller divides once) instead of scaled by 1/m.
  bool unscaled = false;
  /// Units per micro-batch (Note [Sample units]): > 1 runs each scheduled micro-batch as this
  /// many units of its leading dimension, each with its own forward, loss and backward; the
  /// functions above then see unit indices (micro-batch i's units are i*units ... i*units +
  /// units - 1) and one-unit inputs, and the losses are per unit.
  int units = 1;
  /// Optional, by chunk: whether a received activation needs its gradient (false where every
  /// parameter before the chunk is frozen: train.frozen_layers). A chunk that does not need it
  /// computes none and sends zeros back (the schedule's messages stay as they are), and a chunk
  /// whose output needs no gradient (all of it and before it frozen) skips its backward.
  std::vector<bool> input_needs_grad;
};

/// One action as it ran: what, and its start and end in microseconds since the step began.
struct TraceEvent {
  ActionKind kind = ActionKind::kForward;
  int chunk = 0;
  int microbatch = 0;
  double start_us = 0;
  double end_us = 0;
};

class PipelineExecutor {
 public:
  /// `pp`: this rank's pipeline group (rank = pipeline rank). `activation_shape`: the shape of
  /// one micro-batch's activation between stages.
  PipelineExecutor(Communicator& pp, std::vector<int64_t> activation_shape,
                   torch::ScalarType dtype = torch::kFloat);

  /// Checks `schedule` (throws before any communication if it is invalid; a schedule equal to
  /// the last one checked is not checked again, so a training loop pays for it once), runs
  /// this rank's actions and returns the mean loss over the micro-batches, on every pipeline rank.
  double run(const Schedule& schedule, const StageFunctions& stage);

  /// Record each action's timing in the next runs (for traces).
  void set_tracing(bool on) { tracing_ = on; }
  bool tracing() const { return tracing_; }
  /// The last run's loss of each micro-batch (each unit, with StageFunctions::units > 1), by
  /// index, on every pipeline rank.
  const std::vector<double>& microbatch_losses() const { return losses_; }
  /// The last run's actions, in order (empty unless tracing).
  const std::vector<TraceEvent>& trace() const { return trace_; }
  /// Peak number of micro-batches whose activations this rank held in the last run.
  int peak_live_microbatches() const { return peak_live_; }
  /// Peak growth of the heap during the last run while tracing (activations held), in bytes.
  int64_t peak_activation_bytes() const { return peak_bytes_; }

 private:
  Communicator& pp_;
  std::vector<int64_t> shape_;
  torch::ScalarType dtype_;
  bool tracing_ = false;
  Schedule checked_;  // the last schedule that passed check_schedule
  std::vector<TraceEvent> trace_;
  std::vector<double> losses_;
  int peak_live_ = 0;
  int64_t peak_bytes_ = 0;
};

}  // namespace triax
