// defines: triax::ServedParam, triax::ServedBuffer, triax::ServerClient
//
// A worker's side of the parameter servers (ddp.mode: parameter_server, docs/parameter_server.md):
// DistributedDataParallel pushes each bucket here instead of all-reducing it (GradientPush); the
// servers, which hold the parameters and the optimizer's state (train/param_server.h), average
// the workers' pushes, take the step and send the new weights back, which pull() writes into this
// worker's parameters. The optimizer on a worker (train/optim/server_optimizer.h) is a proxy that
// calls pull(); checkpoints fetch and load the servers' state through it, in today's format.
// Orders and messages: parallel/ps/server_wire.h. A colocated server is run by its own worker
// between sending an order and waiting for the answer (set_local_server).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "parallel/dp/gradient_push.h"
#include "parallel/ps/server_topology.h"
#include "parallel/ps/server_wire.h"

namespace triax {

/// One parameter of a pushed buffer.
struct ServedParam {
  std::string name;      ///< its checkpoint name
  std::string norm_key;  ///< its key in the global norm's order; empty: not counted here
  torch::Tensor tensor;  ///< the worker's parameter (pull() writes it)
  int64_t offset = 0;    ///< where its gradient starts in the buffer
  /// Its gradient is summed over the tp positions' servers after averaging (sequence
  /// parallelism: each tp rank saw part of the sequence).
  bool sequence_partial = false;
  /// One copy of a tied weight whose other copy is at another pipeline position: the servers of
  /// both sum the copies' gradients.
  bool tied = false;
};

/// One of a chunk's DDP buffers (its buckets, then its gradient holders) as the servers see it.
struct ServedBuffer {
  int server = 0;
  int64_t numel = 0;
  std::vector<ServedParam> params;  ///< a bucket's members; empty for a gradient holder
  std::string tied_to;              ///< a holder: the parameter whose gradient it joins
};

class ServerClient : public GradientPush {
 public:
  explicit ServerClient(ServerTopology& topology);

  /// A colocated server: `serve_round` takes one order from every worker and carries it out.
  void set_local_server(std::function<void()> serve_round) { serve_ = std::move(serve_round); }
  /// Chunk `chunk`'s buffers, in DDP's order (chunks in order, from 0).
  void add_chunk(int chunk, std::vector<ServedBuffer> buffers);
  /// After every chunk: the servers learn their buffers and take worker 0's values. `divisor`:
  /// what a step's pushes are averaged over besides the workers (the micro-batch tree's leaves
  /// under layout-invariant numerics, whose roots arrive unscaled; else 1). `max_norm`: clipping.
  void start(double divisor, double max_norm);
  void set_learning_rate(double lr) { lr_ = lr; }
  /// Asynchronous servers (parameter_server.staleness > 0). `per_push` (apply: push): each
  /// worker's step is applied alone, clipped by the norm of that worker's own gradient, which
  /// pull() computes and sends.
  void set_asynchronous(bool on, bool per_push) {
    asynchronous_ = on;
    per_push_ = on && per_push;
  }
  bool asynchronous() const { return asynchronous_; }
  /// Whether the coming step is one where the workers meet (Order::meet).
  void set_meeting(bool meet) { meet_ = meet; }

  WorkPtr push(int chunk, int index, const torch::Tensor& buffer) override;
  /// After this step's pushes: the servers' new weights into the parameters. Returns the global
  /// gradient norm before clipping (asynchronous: of the servers' last update; apply: push: this
  /// worker's gradient's).
  double pull();
  /// Every server's optimizer state by checkpoint name (worker 0; the others get none).
  std::vector<std::pair<std::string, torch::Tensor>> fetch_state();
  /// The parameters' values and optimizer state by checkpoint name, from worker 0 to the servers.
  void load(const std::map<std::string, torch::Tensor>& tensors);
  /// The run is over: the servers leave their loop.
  void stop();
  /// The run cannot start: the servers stop with `message` (a ConfigError's), as the workers do.
  void refuse(const std::string& message);

  const ServerTopology& topology() const { return topology_; }
  /// Steps the servers have taken (as this worker counts them).
  int64_t steps() const { return steps_; }
  /// Asynchronous: the workers (dp ranks) the servers dropped, as server 0 said at the last
  /// meeting (every worker at a meeting hears the same), ascending.
  const std::vector<int>& dropped_workers() const { return dropped_; }
  void set_steps(int64_t steps) { steps_ = steps; }

 private:
  /// Sends `command` to every server of this position, then runs a colocated server's round.
  void order(ps::Command command);
  /// Server s's buffers as text (ServerRole parses it: train/param_server.cpp).
  std::string describe(int server, double divisor, double max_norm) const;
  int id_of(int chunk, int index) const;
  /// Asynchronous: the norm of this worker's gradient as its servers will apply it (the pushed
  /// sums over the divisor, a tied holder added to its weight), in the servers' key order.
  double pushed_norm() const;

  ServerTopology& topology_;
  Communicator& bridge_;
  std::vector<ServedBuffer> buffers_;  // every chunk's, by id
  std::vector<int> chunk_start_;       // the id of each chunk's first buffer
  std::function<void()> serve_;
  ps::Outbox out_;
  double lr_ = 0;
  double divisor_ = 1;
  bool asynchronous_ = false;
  bool per_push_ = false;
  bool meet_ = true;
  std::vector<torch::Tensor> pushed_;  // this step's buffers, by id (asynchronous: the norm)
  bool stepping_ = false;              // this step's order went out
  int64_t steps_ = 0;
  std::vector<int> dropped_;
};

}  // namespace triax
