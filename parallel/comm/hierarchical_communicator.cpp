#include "parallel/comm/hierarchical_communicator.h"

#include <algorithm>
#include <deque>
#include <map>

#include "core/error.h"
#include "parallel/comm/polled_work.h"

namespace triax {

// One all-reduce in flight: its three collectives are issued one after another as each
// completes (phase = how many were issued; 4 once the result is in place).
struct HierarchicalCommunicator::Op {
  torch::Tensor tensor, buffer, chunk;
  ReduceOp op = ReduceOp::kSum, stage_op = ReduceOp::kSum;
  bool copy_back = false;
  int phase = 0;
  WorkPtr work;
};

class HierarchicalCommunicator::OpWork : public Work {
 public:
  OpWork(HierarchicalCommunicator& comm, std::shared_ptr<Op> op)
      : comm_(comm), op_(std::move(op)) {}
  bool is_completed() override {
    comm_.progress();
    return op_->phase == 4;
  }
  void wait() override {
    comm_.progress();
    while (op_->phase < 4) {
      comm_.pending_.front()->work->wait();  // the oldest is never held back by another
      comm_.progress();
    }
  }

 private:
  HierarchicalCommunicator& comm_;
  std::shared_ptr<Op> op_;
};

HierarchicalCommunicator::HierarchicalCommunicator(Communicator& flat,
                                                   const std::vector<int>& node_of_rank,
                                                   Scheme scheme)
    : flat_(flat), scheme_(scheme) {
  TRIAX_CHECK(static_cast<int>(node_of_rank.size()) == flat.size(), "node_of_rank has ",
              node_of_rank.size(), " entries for a communicator of ", flat.size());
  std::map<int, std::vector<int>> members;  // node -> flat ranks, ascending
  for (int r = 0; r < flat.size(); ++r) members[node_of_rank[static_cast<size_t>(r)]].push_back(r);
  for (const auto& [node, ranks] : members) {
    if (ranks.size() != members.begin()->second.size()) {
      std::vector<std::string> counts;
      for (const auto& [n, rs] : members) counts.push_back(str(rs.size()));
      throw ConfigError(str("ddp.hierarchical: the group ", flat.label(),
                            " has unequal numbers of ranks per node (", join(counts, ", "),
                            "); a hierarchical all-reduce needs the same number on every node "
                            "(valid: ddp.hierarchical: false or auto, or launch as many ranks "
                            "on each node)"));
    }
  }
  const int node = node_of_rank[static_cast<size_t>(flat.rank())];
  const std::vector<int>& mine = members[node];
  const int local =
      static_cast<int>(std::find(mine.begin(), mine.end(), flat.rank()) - mine.begin());
  // Key = flat rank: inside a node ranks keep their order; across nodes, node order.
  local_rank_ = local;
  intra_scatter_ = flat.split(node, flat.rank());
  intra_gather_ = flat.split(node, flat.rank());
  inter_ = flat.split(local, flat.rank());
  std::vector<int> intra_world, inter_world;
  for (int r : mine) intra_world.push_back(flat.world_rank_of(r));
  for (const auto& [n, ranks] : members) {
    inter_world.push_back(flat.world_rank_of(ranks[static_cast<size_t>(local)]));
  }
  intra_scatter_->set_label("intra-node", intra_world);
  intra_gather_->set_label("intra-node", intra_world);
  inter_->set_label("inter-node", inter_world);
  copy_label(flat);
}

WorkPtr HierarchicalCommunicator::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  if (tensor.numel() == 0) return std::make_shared<DoneWork>();
  auto pending = std::make_shared<Op>();
  const int64_t local = intra_scatter_->size();
  const int64_t n = tensor.numel();
  const int64_t padded_n = (n + local - 1) / local * local;
  const bool in_place = padded_n == n && tensor.is_contiguous();
  // Sums throughout and one division at the end, as the flat all-reduce's average does.
  pending->stage_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  pending->op = op;
  if (in_place) {
    pending->buffer = tensor.view({-1});
  } else {
    pending->buffer = torch::zeros({padded_n}, tensor.options());
    pending->buffer.narrow(0, 0, n).copy_(tensor.reshape({-1}));
  }
  pending->copy_back = !in_place;
  pending->tensor = std::move(tensor);
  pending->chunk = torch::empty({padded_n / local}, pending->buffer.options());
  pending->work = scheme_ == Scheme::kLeader
                      ? intra_scatter_->all_reduce_async(pending->buffer, pending->stage_op)
                      : intra_scatter_->reduce_scatter_async(pending->chunk, pending->buffer,
                                                             pending->stage_op);
  pending->phase = 1;
  pending_.push_back(pending);
  return std::make_shared<OpWork>(*this, std::move(pending));
}

// Collectives on one communicator must be issued in the same order on every rank. Phase 1 is
// issued in call order; a later all-reduce may issue its phase 2 or 3 only after every earlier
// one has issued it, whatever the timing of completions on this rank. The reduce-scatters and
// all-gathers inside a node use two communicators, so their relative order never matters.
void HierarchicalCommunicator::progress() {
  int previous_phase = 4;  // the op before this one (4: none left, nothing holds this one back)
  for (const std::shared_ptr<Op>& op : pending_) {
    while (op->phase < 4 && op->work->is_completed()) {
      const int next = op->phase + 1;
      if (next <= 3 && previous_phase < next) break;
      if (next == 2 && scheme_ == Scheme::kLeader) {
        op->work = local_rank_ == 0 ? inter_->all_reduce_async(op->buffer, op->stage_op)
                                    : std::make_shared<DoneWork>();
      } else if (next == 2) {
        op->work = inter_->all_reduce_async(op->chunk, op->stage_op);
      } else if (next == 3 && scheme_ == Scheme::kLeader) {
        op->work = intra_gather_->broadcast_async(op->buffer, 0);
      } else if (next == 3) {
        op->work = intra_gather_->all_gather_async(op->buffer, op->chunk);
      } else {
        if (op->op == ReduceOp::kAvg) op->buffer.div_(size());
        if (op->copy_back) {
          op->tensor.copy_(op->buffer.narrow(0, 0, op->tensor.numel()).view(op->tensor.sizes()));
        }
        op->work.reset();
      }
      op->phase = next;
      if (next == 4) break;
    }
    previous_phase = op->phase;
  }
  while (!pending_.empty() && pending_.front()->phase == 4) pending_.pop_front();
}

}  // namespace triax
