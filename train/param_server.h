// defines: triax::ParameterServer, triax::run_parameter_server
//
// The server side of ddp.mode: parameter_server (docs/parameter_server.md). A server holds its
// share of one model position's parameters (whole DDP buckets, split among the K servers by bytes:
// parallel/ps/server_shards.h) and their AdamW (or SGD) state. Each round it takes one order from
// every worker of its position (parallel/ps/server_wire.h); a step's:
//   1. every worker's push of each buffer, added in worker order by the left-balanced tree
//      (tree_sum: the association of tree_all_reduce over the same ranks) and divided once by
//      workers x the divisor — what DDP's all-reduce leaves, so that under layout-invariant
//      numerics a synchronous server gives DDP's gradients bit for bit;
//   2. model parallelism's sums, as finalize_model_grads makes them: sequence-parallel
//      parameters' gradients over the tp positions' servers, a tied weight's copies over the
//      servers of the first and last stage (or its holder, a pipeline of one stage under
//      layout-invariant numerics, summed into it);
//   3. the global gradient norm over every server's counted parameters (OrderedGradNorm over the
//      server group: keys fixed by name), clipping, the update (ReplicatedOptimizer: the
//      optimizer's arithmetic is per element, so a share of the parameters takes the same step);
//   4. the new weights to every worker, and (server 0) the norm.
// Asynchronous servers (parameter_server.staleness S > 0, dedicated): no rounds; pushes are taken
// as they come. parameter_server.apply: step (auto's choice at tp or pp > 1) makes the
// synchronous update (1.-3.) of a step once every worker's push of it has come — what is stale is
// the weights a worker computed its gradient on (Stale Synchronous Parallel). apply: push (auto's
// choice at tp = pp = 1) applies each worker's step alone as soon as its pushes and the norm of
// its gradient have come: its gradient (its 1/W of the global batch) clipped by its own norm, at
// 1/W of the step's learning rate (W pushes make one synchronous step's worth). Either way a
// worker is answered with the weights of that moment once the slowest worker is at most S steps
// behind it (it may run S steps ahead), or, at a step where the workers meet (logs, evaluations,
// checkpoints), once every worker has pushed the step: they then go on from the same weights.
// Between meetings the answer looks ahead (parameter_server.look_ahead): the weights plus the last
// update times the updates expected before the worker's next push is applied, so that its
// gradient is taken near where it will be applied (the stale gradient's error is what costs an
// asynchronous run its loss).
// Checkpoints: the servers hand worker 0 their state, and take it from there on a resume, by
// checkpoint name: the format is today's, and a run resumes in either mode.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "parallel/dp/ordered_grad_norm.h"
#include "parallel/ps/server_topology.h"
#include "parallel/ps/server_wire.h"
#include "train/optim/optimizer.h"

namespace triax {

class ParameterServer {
 public:
  /// `topology`: this rank serves (a dedicated server, or a colocated worker).
  ParameterServer(const TrainConfig& train, ServerTopology& topology);
  /// Takes one order from every worker of the position and carries it out; false after stop.
  bool serve_round();
  /// Asynchronous servers (staleness > 0): serves until the workers say stop.
  /// `per_push`: each worker's push applied alone (parameter_server.apply: push), else one update
  /// per step. `look_ahead`: parameter_server.look_ahead.
  /// A worker the heartbeat drops (job/heartbeat.h) is forgotten: the bound, the look-ahead and the
  /// orders count the others; server 0 tells each meeting who is left (kMembersTag). An MPI
  /// error on a worker's message waits `heartbeat_s` + 3 s for that verdict.
  void serve_asynchronously(int64_t staleness, bool per_push, bool look_ahead, double heartbeat_s);

 private:
  struct Buffer {
    int id = 0;
    int64_t numel = 0;
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // each one's first element in the buffer
    torch::Tensor holder;          // a gradient holder's stand-in (params empty)
    std::string tied_to;
  };
  void init(const std::string& description,
            const std::vector<std::pair<std::string, torch::Tensor>>& values);
  void step(const ps::Order& order);
  /// Carries out an order every worker sent alike (init, state, load, stop); false after stop.
  bool collective(const ps::Order& order);
  /// `gradients` (each buffer's, averaged) into the parameters' .grad, a tied holder summed into
  /// its weight, and the optimizer's step at `lr`; returns the norm it clipped by.
  double update(const std::vector<torch::Tensor>& gradients, double lr);
  /// Asynchronous: one worker's pushes (`parts`, by buffer; divided here) applied alone, clipped
  /// by `norm`.
  void apply_one(std::vector<torch::Tensor>& parts, double norm, double lr);
  /// Every buffer's weights to `workers`; `ahead` > 0: plus the last update that many times (the
  /// look-ahead).
  void answer(const std::vector<int>& workers, double ahead = 0);
  void load(const std::vector<std::pair<std::string, torch::Tensor>>& tensors);
  std::vector<std::pair<std::string, torch::Tensor>> state();
  size_t param_index(const std::string& name) const;

  TrainConfig train_;
  ServerTopology& topology_;
  Communicator& bridge_;
  std::vector<OptimizedParam> params_;
  std::vector<Buffer> buffers_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<OrderedGradNorm> norm_;
  // Model parallelism's sums among the servers (after averaging, as finalize_model_grads does):
  // sequence-partial parameters over this (pp, cp) position's tp servers; a tied weight's copy
  // with the other end's servers.
  std::vector<torch::Tensor> sequence_partial_;
  std::vector<torch::Tensor> tied_copies_;
  std::unique_ptr<Communicator> sequence_group_;
  std::unique_ptr<Communicator> tied_group_;
  double divisor_ = 1;
  double max_norm_ = 0;
  double applied_norm_ = 0;  // apply: push — the norm the next update clips by
  bool per_push_ = false;
  // parameter_server.look_ahead: each parameter's change in the last update (asynchronous).
  bool look_ahead_ = false;
  std::vector<torch::Tensor> last_update_;
  double last_norm_ = 0;  // apply: step — the last update's norm before clipping
  ps::Outbox out_;
  bool started_ = false;
};

/// A dedicated server's life: rounds until the workers say stop.
void run_parameter_server(const Config& config, ServerTopology& topology);

}  // namespace triax
