// defines: triax::ReduceOp, triax::Work, triax::Communicator
//
// The one interface every collective in triax goes through, so that MPI (CPU) and NCCL (GPU)
// backends are interchangeable and c10d's changing C++ surface stays out of the code.
// Backends implement the non-blocking forms; the blocking forms are those plus wait().
// Tensors may be non-contiguous and of any common dtype; results are written in place
// (all_reduce, broadcast, recv) or returned (all_gather, reduce_scatter).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace triax {

enum class ReduceOp { kSum, kAvg, kMax, kMin };

/// "sum", "avg", "max", "min".
const char* reduce_op_name(ReduceOp op);

/// A pending non-blocking operation. Its tensors must not be touched until wait() returns.
class Work {
 public:
  virtual ~Work() = default;
  /// Blocks until the operation is complete (and its result is in place).
  virtual void wait() = 0;
  /// Non-blocking test; true once complete (the result is then in place).
  virtual bool is_completed() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "mpi", "nccl", ...
  virtual std::string backend() const = 0;

  /// In place: every rank ends with op over all ranks' `tensor`. kAvg needs a floating dtype.
  virtual WorkPtr all_reduce_async(torch::Tensor tensor, ReduceOp op) = 0;
  /// Every rank's `input` (same shape everywhere) concatenated along dim 0 in rank order.
  /// `output` must have shape [size * input.size(0), ...input.shape[1:]].
  virtual WorkPtr all_gather_async(torch::Tensor output, torch::Tensor input) = 0;
  /// Reduces `input` over ranks and leaves this rank's chunk of dim 0 in `output`
  /// (input.size(0) == size * output.size(0)).
  virtual WorkPtr reduce_scatter_async(torch::Tensor output, torch::Tensor input, ReduceOp op) = 0;
  /// In place: every rank ends with `root`'s tensor.
  virtual WorkPtr broadcast_async(torch::Tensor tensor, int root) = 0;
  virtual WorkPtr isend(torch::Tensor tensor, int dst, int tag = 0) = 0;
  /// Receives into `tensor` (shape and dtype must match the sender's).
  virtual WorkPtr irecv(torch::Tensor tensor, int src, int tag = 0) = 0;
  virtual WorkPtr barrier_async() = 0;
  /// `input`'s dim 0 cut into size() equal chunks: chunk j goes to rank j, and `output`'s chunk i
  /// (output shaped as input) is what rank i sent this one. The default is a receive from and a
  /// send to every peer (point-to-point, tag `tag`); NCCL groups them (its separate p2p calls on
  /// one stream would wait on each other).
  virtual WorkPtr all_to_all_async(torch::Tensor output, torch::Tensor input, int tag = 0);

  /// Collective over this communicator: ranks passing the same `color` form a new
  /// communicator, ranked by `key`. A negative color joins none and returns nullptr.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Blocking conveniences.
  void all_reduce(torch::Tensor tensor, ReduceOp op = ReduceOp::kSum) {
    all_reduce_async(std::move(tensor), op)->wait();
  }
  torch::Tensor all_gather(const torch::Tensor& input);
  /// Each entry's largest value over the ranks (a measured time is its slowest rank's).
  std::vector<double> max_over_ranks(const std::vector<double>& mine);
  torch::Tensor reduce_scatter(const torch::Tensor& input, ReduceOp op = ReduceOp::kSum);
  void broadcast(torch::Tensor tensor, int root) {
    broadcast_async(std::move(tensor), root)->wait();
  }
  void send(torch::Tensor tensor, int dst, int tag = 0) {
    isend(std::move(tensor), dst, tag)->wait();
  }
  void recv(torch::Tensor tensor, int src, int tag = 0) {
    irecv(std::move(tensor), src, tag)->wait();
  }
  void barrier() { barrier_async()->wait(); }

  /// How flight records and timeout messages name this group: "dp [0,2]" (its name and the
  /// world ranks of its members, in group-rank order). Until set: "group of N".
  void set_label(const std::string& name, std::vector<int> world_ranks);
  const std::string& label() const { return label_; }
  /// Takes `other`'s label and member ranks (a wrapper over the same ranks).
  void copy_label(const Communicator& other);
  /// The world rank of group rank `rank` (itself until set_label).
  int world_rank_of(int rank) const;

  /// Seconds any wait on any communicator may block before it throws TimeoutError
  /// (comm.timeout_s); process-wide, set once at start-up.
  static void set_timeout(double seconds);
  static double timeout();

 protected:
  /// Records the start of an operation in the flight recorder. Collectives get the group's next
  /// sequence number, point-to-point operations the peer's world rank.
  uint64_t record(const char* kind, int peer, int tag, int64_t bytes);
  static int64_t bytes_of(const torch::Tensor& t) {
    return t.numel() * static_cast<int64_t>(t.element_size());
  }
  // Argument checks every backend shares, so a mistake reads the same whichever runs.
  void check_peer(int peer, const char* what) const;
  /// `big` must be [size * small.size(0), small.shape[1:]...] of `small`'s dtype.
  void check_stacked(const torch::Tensor& big, const torch::Tensor& small, const char* what) const;

 private:
  std::string label_;
  std::vector<int> world_ranks_;
  int64_t collectives_ = 0;
};

}  // namespace triax
