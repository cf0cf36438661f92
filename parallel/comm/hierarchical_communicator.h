// defines: triax::HierarchicalCommunicator
//
// A Communicator over the same ranks as `flat` whose all-reduce knows the nodes (SageMaker's
// data-parallel library and NCCL's trees do the same): reduce-scatter inside each node, all-reduce
// each 1/L chunk across nodes among the ranks with the same local index, all-gather inside the
// node. Every rank then sends (L-1)/L of the tensor over fast intra-node links and only 1/L of it
// over the slow link, and the L ranks of a node share the inter-node work evenly — where a flat
// ring or recursive halving sends the whole tensor across the node boundary per rank.
// Every other operation goes to `flat` unchanged. Sums are reordered, so results equal the flat
// all-reduce to rounding (the composition tolerance), not bit for bit.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

class HierarchicalCommunicator : public Communicator {
 public:
  /// kScatter: reduce-scatter in node, L concurrent all-reduces of n/L across, all-gather in
  /// node (the default: balances the inter-node work over every rank). kLeader: all-reduce in
  /// node, one all-reduce of n across among each node's first rank, broadcast in node (one flow
  /// per link: what a link that shares badly between flows prefers; tools/bench/multinode.sh).
  enum class Scheme { kScatter, kLeader };

  /// Collective over `flat` (it must outlive this). `node_of_rank[r]`: the node of flat rank r.
  /// Every node must hold the same number of `flat`'s ranks (throws ConfigError naming them
  /// otherwise).
  HierarchicalCommunicator(Communicator& flat, const std::vector<int>& node_of_rank,
                           Scheme scheme = Scheme::kScatter);

  /// Ranks of this node in `flat` (L) and nodes (N); L * N == size().
  int local_size() const { return intra_scatter_->size(); }
  int num_nodes() const { return inter_->size(); }

  int rank() const override { return flat_.rank(); }
  int size() const override { return flat_.size(); }
  std::string backend() const override { return flat_.backend() + "+hierarchical"; }

  WorkPtr all_reduce_async(torch::Tensor tensor, ReduceOp op) override;
  WorkPtr all_gather_async(torch::Tensor output, torch::Tensor input) override {
    return flat_.all_gather_async(std::move(output), std::move(input));
  }
  WorkPtr reduce_scatter_async(torch::Tensor output, torch::Tensor input, ReduceOp op) override {
    return flat_.reduce_scatter_async(std::move(output), std::move(input), op);
  }
  WorkPtr broadcast_async(torch::Tensor tensor, int root) override {
    return flat_.broadcast_async(std::move(tensor), root);
  }
  WorkPtr isend(torch::Tensor tensor, int dst, int tag = 0) override {
    return flat_.isend(std::move(tensor), dst, tag);
  }
  WorkPtr irecv(torch::Tensor tensor, int src, int tag = 0) override {
    return flat_.irecv(std::move(tensor), src, tag);
  }
  WorkPtr barrier_async() override { return flat_.barrier_async(); }
  WorkPtr all_to_all_async(torch::Tensor output, torch::Tensor input, int tag = 0) override {
    return flat_.all_to_all_async(std::move(output), std::move(input), tag);
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return flat_.split(color, key);
  }

 private:
  struct Op;
  class OpWork;
  /// Advances every all-reduce in flight as far as its collectives' completion and the issue
  /// order allow.
  void progress();

  Communicator& flat_;
  Scheme scheme_;
  int local_rank_ = 0;
  std::unique_ptr<Communicator> intra_scatter_, intra_gather_, inter_;
  std::deque<std::shared_ptr<Op>> pending_;
};

}  // namespace triax
