#include "parallel/comm/communicator.h"

#include "core/error.h"
#include "core/flight_recorder.h"

namespace triax {
namespace {
double g_timeout_s = 300;
}  // namespace

void Communicator::set_timeout(double seconds) {
  g_timeout_s = seconds;
}

double Communicator::timeout() {
  return g_timeout_s;
}

void Communicator::set_label(const std::string& name, std::vector<int> world_ranks) {
  label_ = str(name, " [", join(world_ranks, ","), "]");
  world_ranks_ = std::move(world_ranks);
}

void Communicator::copy_label(const Communicator& other) {
  label_ = other.label_;
  world_ranks_ = other.world_ranks_;
}

int Communicator::world_rank_of(int rank) const {
  return rank >= 0 && rank < static_cast<int>(world_ranks_.size())
             ? world_ranks_[static_cast<size_t>(rank)]
             : rank;
}

uint64_t Communicator::record(const char* kind, int peer, int tag, int64_t bytes) {
  flight::Event event;
  event.kind = kind;
  event.group = label_.empty() ? str("group of ", size()) : label_;
  event.peer = peer >= 0 ? world_rank_of(peer) : -1;
  event.tag = tag;
  event.bytes = bytes;
  event.seq = peer >= 0 ? -1 : collectives_++;
  return flight::begin(event);
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "unknown";
}

std::vector<double> Communicator::max_over_ranks(const std::vector<double>& mine) {
  torch::Tensor t = torch::tensor(mine, torch::kDouble);
  all_reduce(t, ReduceOp::kMax);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

namespace {

// Several transfers that complete together.
class AllOf : public Work {
 public:
  explicit AllOf(std::vector<WorkPtr> parts) : parts_(std::move(parts)) {}
  void wait() override {
    for (auto& part : parts_) part->wait();
  }
  bool is_completed() override {
    bool done = true;
    for (auto& part : parts_) done = part->is_completed() && done;  // tests each: progress
    return done;
  }

 private:
  std::vector<WorkPtr> parts_;
};

}  // namespace

WorkPtr Communicator::all_to_all_async(torch::Tensor output, torch::Tensor input, int tag) {
  TRIAX_CHECK(input.dim() >= 1 && input.size(0) % size() == 0 && output.sizes() == input.sizes() &&
                  output.scalar_type() == input.scalar_type(),
              "all_to_all: input ", input.sizes(), " (dim 0 divisible by the group size ", size(),
              ") and output ", output.sizes(), " of the same shape and dtype");
  const int64_t chunk = input.size(0) / size();
  std::vector<WorkPtr> parts;
  for (int peer = 0; peer < size(); ++peer) {
    torch::Tensor into = output.narrow(0, peer * chunk, chunk);
    torch::Tensor from = input.narrow(0, peer * chunk, chunk);
    if (peer == rank()) {
      into.copy_(from);
      continue;
    }
    parts.push_back(irecv(into, peer, tag));
    parts.push_back(isend(from, peer, tag));
  }
  return std::make_shared<AllOf>(std::move(parts));
}

torch::Tensor Communicator::all_gather(const torch::Tensor& input) {
  TRIAX_CHECK(input.dim() >= 1, "all_gather needs a tensor of at least one dimension");
  std::vector<int64_t> shape = input.sizes().vec();
  shape[0] *= size();
  torch::Tensor output = torch::empty(shape, input.options());
  all_gather_async(output, input)->wait();
  return output;
}

torch::Tensor Communicator::reduce_scatter(const torch::Tensor& input, ReduceOp op) {
  TRIAX_CHECK(input.dim() >= 1 && input.size(0) % size() == 0, "reduce_scatter: dim 0 (",
              input.dim() >= 1 ? input.size(0) : 0, ") must be divisible by the group size ",
              size());
  std::vector<int64_t> shape = input.sizes().vec();
  shape[0] /= size();
  torch::Tensor output = torch::empty(shape, input.options());
  reduce_scatter_async(output, input, op)->wait();
  return output;
}

void Communicator::check_peer(int peer, const char* what) const {
  TRIAX_CHECK(peer >= 0 && peer < size(), what, ": peer rank ", peer, " is not in [0, ", size(),
              ")");
}

void Communicator::check_stacked(const torch::Tensor& big, const torch::Tensor& small,
                                 const char* what) const {
  TRIAX_CHECK(big.scalar_type() == small.scalar_type(), what, ": dtypes differ");
  const bool gather = std::string(what) == "all_gather";
  TRIAX_CHECK(small.dim() >= 1 && big.dim() == small.dim() &&
                  big.size(0) == small.size(0) * size() &&
                  big.sizes().slice(1) == small.sizes().slice(1),
              what, ": ", gather ? "output" : "input", " shape ", big.sizes(), " must be [", size(),
              " * dim0, ...] of ", gather ? "input" : "output", " shape ", small.sizes());
}

}  // namespace triax
