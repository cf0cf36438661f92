#include "parallel/comm/mpi_communicator.h"

#include <sched.h>

#include <chrono>
#include <climits>
#include <deque>
#include <functional>
#include <vector>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "parallel/comm/mpi_bf16_sum.h"
#include "parallel/comm/mpi_check.h"
#include "parallel/comm/polled_work.h"

namespace triax {
namespace {

// Largest element count per MPI call (MPI counts are int).
constexpr int64_t kMaxChunk = int64_t{1} << 30;

// bf16 sums stay bf16 on the wire (mpi_bf16_sum.h); fp16, and bf16 max/min, are reduced in fp32.
bool bf16_sum(torch::ScalarType type, ReduceOp op) {
  return type == torch::kBFloat16 && (op == ReduceOp::kSum || op == ReduceOp::kAvg);
}
bool reduced_in_fp32(torch::ScalarType type, ReduceOp op) {
  return (type == torch::kHalf || type == torch::kBFloat16) && !bf16_sum(type, op);
}

MPI_Datatype mpi_type(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat:
      return MPI_FLOAT;
    case torch::kDouble:
      return MPI_DOUBLE;
    case torch::kInt:
      return MPI_INT32_T;
    case torch::kLong:
      return MPI_INT64_T;
    case torch::kShort:
      return MPI_INT16_T;
    case torch::kChar:
      return MPI_INT8_T;
    case torch::kByte:
      return MPI_UINT8_T;
    case torch::kBool:
      return MPI_C_BOOL;
    case torch::kHalf:
    case torch::kBFloat16:
      return MPI_UINT16_T;  // raw 16-bit words: moved, or summed by bf16_sum_op
    default:
      throw Error(str("MpiCommunicator: unsupported dtype ", c10::toString(type)));
  }
}

MPI_Op mpi_op(ReduceOp op, torch::ScalarType type) {
  if (bf16_sum(type, op)) return bf16_sum_op();
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_SUM;
}

void check_cpu(const torch::Tensor& tensor, const char* what) {
  TRIAX_CHECK(tensor.defined(), what, ": undefined tensor");
  TRIAX_CHECK(tensor.device().is_cpu(), what, ": the MPI backend takes CPU tensors, got ",
              tensor.device());
}

void check_reducible(const torch::Tensor& tensor, ReduceOp op, const char* what) {
  TRIAX_CHECK(tensor.scalar_type() != torch::kBool, what, ": bool tensors cannot be reduced");
  TRIAX_CHECK(op != ReduceOp::kAvg || tensor.is_floating_point(), what,
              ": avg needs a floating dtype, got ", tensor.scalar_type());
}

// The contiguous buffer MPI works on: the tensor itself when possible, else a copy.
torch::Tensor reduce_buffer(const torch::Tensor& tensor, ReduceOp op) {
  return reduced_in_fp32(tensor.scalar_type(), op) ? tensor.to(torch::kFloat).contiguous()
                                                   : tensor.contiguous();
}

char* byte_ptr(const torch::Tensor& t) {
  return static_cast<char*>(t.data_ptr());
}

int as_count(int64_t count, const char* what) {
  TRIAX_CHECK(count <= INT_MAX, what, ": ", count, " elements per rank exceed MPI's int count");
  return static_cast<int>(count);
}

// MPI advances a non-blocking operation only inside MPI calls: the work polls (Note
// [Watchdog] in polled_work.h).
class MpiCompletion : public Completion {
 public:
  explicit MpiCompletion(std::vector<MPI_Request> requests) : requests_(std::move(requests)) {}
  bool test() override {
    if (requests_.empty()) return true;
    int flag = 0;
    TRIAX_MPI_CHECK(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag,
                                MPI_STATUSES_IGNORE));
    return flag != 0;
  }

 private:
  std::vector<MPI_Request> requests_;
};

}  // namespace

// Note [Two-phase bf16 all-reduce]: a bf16 sum is a reduce-scatter, then an all-gather of its
// result, posted when the reduce-scatter completes. MPI needs every rank to post collectives on
// a communicator in the same order, but completions are seen at different times on different
// ranks, so the all-gathers go on a second communicator (gathers_) and strictly in the order
// the reduce-scatters were posted: a queue, advanced from whichever operation is tested (any of
// them may be the one waited on).
class MpiCommunicator::GatherQueue {
 public:
  struct Pending {
    std::vector<MPI_Request> scatter;
    std::function<std::vector<MPI_Request>()> post_gather;
    std::vector<MPI_Request> gather;
    bool gathering = false;
  };
  std::shared_ptr<Pending> push(std::vector<MPI_Request> scatter,
                                std::function<std::vector<MPI_Request>()> post_gather) {
    auto pending = std::make_shared<Pending>();
    pending->scatter = std::move(scatter);
    pending->post_gather = std::move(post_gather);
    queue_.push_back(pending);
    return pending;
  }
  // Posts the all-gather of every leading operation whose reduce-scatter has completed.
  void advance() {
    while (!queue_.empty()) {
      Pending& front = *queue_.front();
      int done = 0;
      TRIAX_MPI_CHECK(MPI_Testall(static_cast<int>(front.scatter.size()), front.scatter.data(),
                                  &done, MPI_STATUSES_IGNORE));
      if (!done) return;
      front.gather = front.post_gather();
      front.post_gather = nullptr;
      front.gathering = true;
      queue_.pop_front();
    }
  }

 private:
  std::deque<std::shared_ptr<Pending>> queue_;
};

namespace {

class TwoPhaseCompletion : public Completion {
 public:
  TwoPhaseCompletion(std::shared_ptr<MpiCommunicator::GatherQueue> queue,
                     std::shared_ptr<MpiCommunicator::GatherQueue::Pending> pending)
      : queue_(std::move(queue)), pending_(std::move(pending)) {}
  bool test() override {
    queue_->advance();
    if (!pending_->gathering) return false;
    int done = 0;
    TRIAX_MPI_CHECK(MPI_Testall(static_cast<int>(pending_->gather.size()), pending_->gather.data(),
                                &done, MPI_STATUSES_IGNORE));
    return done != 0;
  }

 private:
  std::shared_ptr<MpiCommunicator::GatherQueue> queue_;
  std::shared_ptr<MpiCommunicator::GatherQueue::Pending> pending_;
};

WorkPtr mpi_work(std::vector<MPI_Request> requests, std::function<void()> finish,
                 uint64_t flight_id) {
  return std::make_shared<PolledWork>(std::make_unique<MpiCompletion>(std::move(requests)),
                                      flight_id, std::move(finish));
}

// After a reduction into `buffer`: average if asked, and copy back when `buffer` is a copy.
std::function<void()> finish_reduce(torch::Tensor buffer, torch::Tensor target, ReduceOp op,
                                    int size) {
  return [buffer, target, op, size]() mutable {
    if (op == ReduceOp::kAvg) buffer.div_(size);
    if (!buffer.is_same(target)) target.copy_(buffer);
  };
}

// Posts `post(pointer, count, type, request)` once per chunk of at most kMaxChunk elements of
// the contiguous `buffer`, and runs `finish` when all chunks are complete. The chunks of one
// point-to-point message keep their order: MPI does not overtake on the same (peer, tag, comm).
using PostChunk = std::function<void(void*, int, MPI_Datatype, MPI_Request*)>;
WorkPtr post_chunked(const torch::Tensor& buffer, const PostChunk& post,
                     std::function<void()> finish, uint64_t flight_id) {
  const MPI_Datatype type = mpi_type(buffer.scalar_type());
  std::vector<MPI_Request> requests;
  for (int64_t offset = 0; offset < buffer.numel(); offset += kMaxChunk) {
    requests.push_back(MPI_REQUEST_NULL);
    post(byte_ptr(buffer) + offset * buffer.element_size(),
         static_cast<int>(std::min(kMaxChunk, buffer.numel() - offset)), type, &requests.back());
  }
  return mpi_work(std::move(requests), std::move(finish), flight_id);
}

// Completion of an operation that wrote into `buffer`: copy into `target` if it is a copy.
std::function<void()> copy_back(torch::Tensor buffer, torch::Tensor target) {
  return [buffer, target]() mutable {
    if (!buffer.is_same(target)) target.copy_(buffer);
  };
}

}  // namespace

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  MPI_Comm comm = MPI_COMM_NULL;
  TRIAX_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  return std::make_unique<MpiCommunicator>(comm);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::self() {
  MPI_Comm comm = MPI_COMM_NULL;
  TRIAX_MPI_CHECK(MPI_Comm_dup(MPI_COMM_SELF, &comm));
  return std::make_unique<MpiCommunicator>(comm);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm)
    : comm_(comm), gather_queue_(std::make_shared<GatherQueue>()) {
  TRIAX_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  TRIAX_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  TRIAX_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
  if (gathers_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&gathers_);
}

WorkPtr MpiCommunicator::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  check_cpu(tensor, "all_reduce");
  check_reducible(tensor, op, "all_reduce");
  if (bf16_sum(tensor.scalar_type(), op) && size_ > 1) return bf16_all_reduce(tensor, op);
  torch::Tensor buffer = reduce_buffer(tensor, op);
  const MPI_Op reduce = mpi_op(op, buffer.scalar_type());
  const uint64_t id = record("all-reduce", -1, -1, bytes_of(tensor));
  return post_chunked(
      buffer,
      [&](void* data, int count, MPI_Datatype type, MPI_Request* request) {
        TRIAX_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, count, type, reduce, comm_, request));
      },
      finish_reduce(buffer, tensor, op, size_), id);
}

// MPICH runs an all-reduce with a user-defined op by recursive doubling, which sends the whole
// buffer at every step: across two nodes, bf16 words that way cost as many bytes as fp32 ones
// by reduce-scatter + all-gather (what MPICH picks for built-in ops). So bf16 sums are posted as
// those two phases here: a reduce-scatter (MPICH halves recursively or goes pairwise for any
// commutative op) of the buffer padded to a multiple of the group, then an all-gather
// (Note [Two-phase bf16 all-reduce]).
WorkPtr MpiCommunicator::bf16_all_reduce(torch::Tensor tensor, ReduceOp op) {
  const int64_t numel = tensor.numel();
  const int64_t chunk = (numel + size_ - 1) / size_;
  const int count = as_count(chunk, "all_reduce");
  torch::Tensor whole = torch::zeros({chunk * size_}, tensor.options());
  whole.narrow(0, 0, numel).copy_(tensor.reshape({-1}));
  torch::Tensor mine = torch::empty({chunk}, tensor.options());
  const uint64_t id = record("all-reduce", -1, -1, bytes_of(tensor));
  std::vector<MPI_Request> first(1, MPI_REQUEST_NULL);
  TRIAX_MPI_CHECK(MPI_Ireduce_scatter_block(whole.data_ptr(), mine.data_ptr(), count, MPI_UINT16_T,
                                            bf16_sum_op(), comm_, &first[0]));
  if (gathers_ == MPI_COMM_NULL) TRIAX_MPI_CHECK(MPI_Comm_dup(comm_, &gathers_));
  MPI_Comm comm = gathers_;
  auto gather = [whole, mine, count, comm]() {
    std::vector<MPI_Request> second(1, MPI_REQUEST_NULL);
    TRIAX_MPI_CHECK(MPI_Iallgather(mine.data_ptr(), count, MPI_UINT16_T, whole.data_ptr(), count,
                                   MPI_UINT16_T, comm, &second[0]));
    return second;
  };
  const int size = size_;
  auto finish = [whole, tensor, numel, op, size]() mutable {
    torch::Tensor result = whole.narrow(0, 0, numel).view(tensor.sizes());
    if (op == ReduceOp::kAvg) result.div_(size);
    tensor.copy_(result);
  };
  auto pending = gather_queue_->push(std::move(first), std::move(gather));
  return std::make_shared<PolledWork>(
      std::make_unique<TwoPhaseCompletion>(gather_queue_, std::move(pending)), id,
      std::move(finish));
}

WorkPtr MpiCommunicator::all_gather_async(torch::Tensor output, torch::Tensor input) {
  check_cpu(input, "all_gather");
  check_cpu(output, "all_gather");
  check_stacked(output, input, "all_gather");
  torch::Tensor send = input.contiguous();
  torch::Tensor recv = output.contiguous();
  const MPI_Datatype type = mpi_type(send.scalar_type());
  const int count = as_count(send.numel(), "all_gather");
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  const uint64_t id = record("all-gather", -1, -1, bytes_of(output));
  TRIAX_MPI_CHECK(MPI_Iallgather(send.data_ptr(), count, type, recv.data_ptr(), count, type, comm_,
                                 &requests[0]));
  auto finish = copy_back(recv, output);
  return mpi_work(
      std::move(requests), [send, finish]() { finish(); }, id);
}

WorkPtr MpiCommunicator::reduce_scatter_async(torch::Tensor output, torch::Tensor input,
                                              ReduceOp op) {
  check_cpu(input, "reduce_scatter");
  check_cpu(output, "reduce_scatter");
  check_reducible(input, op, "reduce_scatter");
  check_stacked(input, output, "reduce_scatter");
  torch::Tensor send = reduce_buffer(input, op);
  torch::Tensor recv = reduce_buffer(output, op);
  const MPI_Datatype type = mpi_type(send.scalar_type());
  const int count = as_count(recv.numel(), "reduce_scatter");
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  const uint64_t id = record("reduce-scatter", -1, -1, bytes_of(input));
  TRIAX_MPI_CHECK(MPI_Ireduce_scatter_block(send.data_ptr(), recv.data_ptr(), count, type,
                                            mpi_op(op, send.scalar_type()), comm_, &requests[0]));
  auto finish = finish_reduce(recv, output, op, size_);
  return mpi_work(
      std::move(requests), [send, finish]() { finish(); }, id);
}

WorkPtr MpiCommunicator::broadcast_async(torch::Tensor tensor, int root) {
  check_cpu(tensor, "broadcast");
  check_peer(root, "broadcast");
  torch::Tensor buffer = tensor.contiguous();
  const uint64_t id = record("broadcast", -1, -1, bytes_of(tensor));
  return post_chunked(
      buffer,
      [&](void* data, int count, MPI_Datatype type, MPI_Request* request) {
        TRIAX_MPI_CHECK(MPI_Ibcast(data, count, type, root, comm_, request));
      },
      copy_back(buffer, tensor), id);
}

WorkPtr MpiCommunicator::isend(torch::Tensor tensor, int dst, int tag) {
  check_cpu(tensor, "isend");
  check_peer(dst, "isend");
  torch::Tensor buffer = tensor.contiguous();
  const uint64_t id = record("send", dst, tag, bytes_of(tensor));
  return post_chunked(
      buffer,
      [&](void* data, int count, MPI_Datatype type, MPI_Request* request) {
        TRIAX_MPI_CHECK(MPI_Isend(data, count, type, dst, tag, comm_, request));
      },
      [buffer]() {}, id);  // the finish keeps the buffer alive until the send completes
}

WorkPtr MpiCommunicator::irecv(torch::Tensor tensor, int src, int tag) {
  check_cpu(tensor, "irecv");
  check_peer(src, "irecv");
  torch::Tensor buffer = tensor.contiguous();
  const uint64_t id = record("recv", src, tag, bytes_of(tensor));
  return post_chunked(
      buffer,
      [&](void* data, int count, MPI_Datatype type, MPI_Request* request) {
        TRIAX_MPI_CHECK(MPI_Irecv(data, count, type, src, tag, comm_, request));
      },
      copy_back(buffer, tensor), id);
}

WorkPtr MpiCommunicator::barrier_async() {
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  const uint64_t id = record("barrier", -1, -1, 0);
  TRIAX_MPI_CHECK(MPI_Ibarrier(comm_, &requests[0]));
  return mpi_work(std::move(requests), nullptr, id);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  // MPI_Comm_split has no non-blocking form and spins; meeting at a yielding barrier first keeps
  // its wait short when ranks are oversubscribed (Note [Oversubscribed progress]).
  barrier();
  MPI_Comm comm = MPI_COMM_NULL;
  TRIAX_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &comm));
  if (comm == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(comm);
}

std::unique_ptr<Communicator> mpi_subgroup(Communicator& parent, const std::vector<int>& members,
                                           int tag) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&parent);
  TRIAX_CHECK(mpi != nullptr, "a communicator of some of the ranks needs the MPI backend (got ",
              parent.backend(), ")");
  MPI_Group all = MPI_GROUP_NULL, some = MPI_GROUP_NULL;
  TRIAX_MPI_CHECK(MPI_Comm_group(mpi->comm(), &all));
  TRIAX_MPI_CHECK(MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &some));
  MPI_Comm comm = MPI_COMM_NULL;
  TRIAX_MPI_CHECK(MPI_Comm_create_group(mpi->comm(), some, tag, &comm));
  MPI_Group_free(&some);
  MPI_Group_free(&all);
  return std::make_unique<MpiCommunicator>(comm);
}

}  // namespace triax
