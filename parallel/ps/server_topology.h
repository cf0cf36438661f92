// defines: triax::ServerTopology
//
// Where the parameter servers are (ddp.mode: parameter_server, docs/parameter_server.md), made
// before the ParallelContext: which ranks train, which serve, and the groups between them.
//  - dedicated: the world's first W x P ranks are the workers (P = tp x pp x cp model positions;
//    their ParallelContext is built over them alone, dp = W) and the last K x P ranks the
//    servers, server s of position p at rank W P + s P + p;
//  - colocated: every rank is a worker, and the first K dp ranks of each position also serve.
// Each position has a bridge: its W workers (bridge ranks 0..W-1, by dp rank) and its K
// servers (dedicated: bridge ranks W..W+K-1; colocated: 0..K-1, the serving workers
// themselves). Pushes and pulls are point-to-point on it. The servers of every position form
// the server group, over which they take the global gradient norm.
#pragma once

#include <memory>
#include <string>

#include "core/config_choices.h"
#include "parallel/comm/communicator.h"
#include "parallel/parallel_layout.h"

namespace triax {

class ServerTopology {
 public:
  /// Collective over `world`. `workers`: the workers' layout (its world is the training ranks:
  /// world size less K x P when dedicated). `servers`: K per position.
  ServerTopology(std::shared_ptr<Communicator> world, const ParallelLayout& workers, int servers,
                 ServerPlacement placement);

  bool trains() const { return trains_; }
  bool serves() const { return server_index_ >= 0; }
  bool dedicated() const { return placement_ == ServerPlacement::kDedicated; }
  int servers() const { return servers_; }
  /// W: the workers of one position (the workers' dp).
  int workers() const { return workers_; }
  /// This rank's server index s in [0, K), or -1 when it does not serve.
  int server_index() const { return server_index_; }
  /// This rank's model position (tp, pp, cp) as a number in [0, P).
  int position() const { return position_; }
  /// The bridge rank of server s.
  int server_rank(int s) const { return dedicated() ? workers_ + s : s; }
  /// The ranks that train: the ParallelContext's world (the whole world when colocated; null on
  /// a dedicated server).
  const std::shared_ptr<Communicator>& worker_world() const { return worker_world_; }
  /// This position's workers and servers (see above).
  Communicator& bridge() { return *bridge_; }
  /// Every serving rank, server index slowest (null on ranks that do not serve).
  Communicator* server_group() { return server_group_.get(); }
  /// The servers that sum a sequence-parallel parameter's gradient: server s of every tp
  /// position of this (pp, cp) position. A split color of the server group.
  int sequence_group_color() const { return server_index_ * (positions_ / tp_) + position_ / tp_; }
  /// The servers that sum a tied weight's copies (first and last stage): this (tp, cp) position's.
  int tied_group_color() const { return (position_ / (tp_ * pp_)) * tp_ + position_ % tp_; }
  /// "[rank 5 server 1]" for a dedicated server's messages.
  std::string prefix() const;

 private:
  ServerPlacement placement_;
  int servers_ = 0;
  int workers_ = 0;
  int position_ = 0;
  int positions_ = 1;
  int tp_ = 1;
  int pp_ = 1;
  int server_index_ = -1;
  int world_rank_ = 0;
  bool trains_ = true;
  std::shared_ptr<Communicator> worker_world_;
  std::unique_ptr<Communicator> bridge_;
  std::unique_ptr<Communicator> server_group_;
};

}  // namespace triax
