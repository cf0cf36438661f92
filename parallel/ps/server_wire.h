// defines: triax::ps::Command, triax::ps::Order, triax::ps::Outbox, triax::ps::send_order,
//          triax::ps::recv_order, triax::ps::send_text, triax::ps::recv_text,
//          triax::ps::send_named, triax::ps::recv_named, triax::ps::push_tag, triax::ps::pull_tag
//
// The messages between parameter-server workers and servers on a position's bridge
// (parallel/ps/server_topology.h), all point-to-point. Every worker sends every server the same
// orders in the same sequence, so a server takes one order from each worker and acts on it:
//   init   worker 0 describes the server's buffers (text) and sends their starting values;
//   step   each worker's pushes follow (one per buffer, tag push_tag(id)); the server answers
//          every worker with the buffer's new weights (pull_tag(id)) and server 0 with the norm;
//          asynchronous servers (staleness S > 0) answer each worker alone: with apply: step,
//          once the bound lets it go on (server 0 with the last update's norm); with apply: push,
//          after its pushes and the norm of its gradient (kNormTag) (docs/parameter_server.md);
//   state  the server sends worker 0 its optimizer state by checkpoint name (a checkpoint);
//   load   worker 0 sends the server its parameters' values and state by name (a resume);
//   stop   the run is over;
//   refuse the run cannot start (worker 0 sends why): every server stops with the same error.
// Sends are non-blocking into an Outbox, waited for later: a colocated server is its own worker,
// so it must post its receives before it waits for what it sent itself.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {
namespace ps {

enum class Command : int64_t {
  kInit = 1,
  kStep = 2,
  kState = 3,
  kLoad = 4,
  kStop = 5,
  kRefuse = 6
};

/// One order: what to do, at which step (steps done before it), with the learning rate for a
/// step. `meet`: asynchronous servers answer this step's pull only once every worker has pushed
/// it (the workers meet: a log, evaluation or checkpoint step), with the same weights for all.
struct Order {
  Command command = Command::kStop;
  int64_t step = 0;
  double lr = 0;
  bool meet = true;
};

/// An order as it travels.
torch::Tensor encode_order(const Order& order);
Order decode_order(const torch::Tensor& t);

/// Buffers of a step are told apart by tag: at most this many per position.
constexpr int kMaxBuffers = 0x1000;
inline int push_tag(int id) {
  return 0x1000 + id;
}
inline int pull_tag(int id) {
  return 0x2000 + id;
}
constexpr int kOrderTag = 0x3000;
constexpr int kNormTag = 0x3001;
constexpr int kTextTag = 0x3002;
constexpr int kTensorTag = 0x3003;
/// Asynchronous, at a meeting: server 0 tells each worker which workers were dropped (W doubles,
/// 1 = dropped).
constexpr int kMembersTag = 0x3004;

/// A dropped worker's operation never completes: kept (unreleased, never waited for: destroying
/// an unfinished work waits for it) until the process ends, since MPI may still hold its buffer.
void abandon(WorkPtr work);

/// Sends in flight, kept until they complete.
class Outbox {
 public:
  /// `peer`: the rank it goes to (forget() drops a peer's), or -1.
  void add(WorkPtr work, int peer = -1) { works_.push_back({peer, std::move(work)}); }
  void wait();
  /// Forgets the sends that have completed (a long-lived outbox).
  void reap();
  /// A dropped worker's sends will never complete: abandoned.
  void forget(int peer);
  ~Outbox();

 private:
  std::vector<std::pair<int, WorkPtr>> works_;
};

void send_order(Communicator& comm, int peer, const Order& order, Outbox& out);
Order recv_order(Communicator& comm, int peer);

void send_text(Communicator& comm, int peer, const std::string& text, Outbox& out);
std::string recv_text(Communicator& comm, int peer);

/// Named tensors of any dtype and shape (their names, dtypes and shapes as text first).
void send_named(Communicator& comm, int peer,
                const std::vector<std::pair<std::string, torch::Tensor>>& tensors, Outbox& out);
std::vector<std::pair<std::string, torch::Tensor>> recv_named(Communicator& comm, int peer);

}  // namespace ps
}  // namespace triax
