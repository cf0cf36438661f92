#include "parallel/comm/mpi_communicator.h"

#include <sched.h>

#include <chrono>
#include <climits>
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

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  TRIAX_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  TRIAX_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  TRIAX_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

WorkPtr MpiCommunicator::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  check_cpu(tensor, "all_reduce");
  check_reducible(tensor, op, "all_reduce");
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

}  // namespace triax
