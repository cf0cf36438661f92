#include "parallel/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>

#include <chrono>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "parallel/comm/polled_work.h"
#include "parallel/comm/torch_cuda_compat.h"

/// TRIAX_NCCL_CHECK(call): throws Error naming the call, this rank and NCCL's message.
#define TRIAX_NCCL_CHECK(call, rank)                                           \
  do {                                                                         \
    const ncclResult_t result_ = (call);                                       \
    if (result_ != ncclSuccess && result_ != ncclInProgress) {                 \
      throw ::triax::Error(::triax::str(#call, " failed on rank ", rank, ": ", \
                                        ncclGetErrorString(result_),           \
                                        " (NCCL_DEBUG=WARN "                   \
                                        "says more)"));                        \
    }                                                                          \
  } while (false)

#define TRIAX_CUDA_CHECK(call)                                                             \
  do {                                                                                     \
    const cudaError_t result_ = (call);                                                    \
    if (result_ != cudaSuccess) {                                                          \
      throw ::triax::Error(::triax::str(#call, " failed: ", cudaGetErrorString(result_))); \
    }                                                                                      \
  } while (false)

namespace triax {

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  int rank = 0;
  int size = 1;
};

namespace {

ncclDataType_t nccl_type(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat:
      return ncclFloat32;
    case torch::kDouble:
      return ncclFloat64;
    case torch::kHalf:
      return ncclFloat16;
    case torch::kBFloat16:
      return ncclBfloat16;
    case torch::kInt:
      return ncclInt32;
    case torch::kLong:
      return ncclInt64;
    case torch::kByte:
    case torch::kBool:
      return ncclUint8;
    case torch::kChar:
      return ncclInt8;
    default:
      throw Error(triax::str("NCCL backend: unsupported dtype ", c10::toString(type)));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

void check_cuda(const torch::Tensor& t, const char* what) {
  TRIAX_CHECK(t.defined() && t.is_cuda(), what, ": the NCCL backend takes CUDA tensors, got ",
              t.defined() ? t.device().str() : std::string("undefined"));
  TRIAX_CHECK(t.is_contiguous(), what, ": the NCCL backend takes contiguous tensors");
}

// Completion of one operation: an event recorded on the communicator's stream after it, polled
// with NCCL's asynchronous error (Note [Watchdog] in polled_work.h); a timeout aborts the
// communicator.
class NcclCompletion : public Completion {
 public:
  explicit NcclCompletion(NcclCommunicator::State& state) : state_(state) {
    TRIAX_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    TRIAX_CUDA_CHECK(cudaEventRecord(event_, state_.stream));
  }
  ~NcclCompletion() override { cudaEventDestroy(event_); }
  bool test() override {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(state_.comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        throw std::runtime_error(ncclGetErrorString(async));
      }
      return false;
    }
    TRIAX_CUDA_CHECK(status);
    return true;
  }
  void abort() override { ncclCommAbort(state_.comm); }
  std::string library() const override { return "NCCL"; }

 private:
  NcclCommunicator::State& state_;
  cudaEvent_t event_ = nullptr;
};

WorkPtr nccl_work(NcclCommunicator::State& state, uint64_t flight_id,
                  std::vector<torch::Tensor> keep) {
  return std::make_shared<PolledWork>(std::make_unique<NcclCompletion>(state), flight_id, nullptr,
                                      std::move(keep));
}

}  // namespace

bool nccl_built() {
  return true;
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device) {
  return NcclCommunicator::create(bootstrap, device);
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::create(Communicator& bootstrap, int device) {
  auto state = std::make_unique<State>();
  state->device = device;
  state->rank = bootstrap.rank();
  state->size = bootstrap.size();
  TRIAX_CUDA_CHECK(cudaSetDevice(device));
  ncclUniqueId id;
  if (bootstrap.rank() == 0) TRIAX_NCCL_CHECK(ncclGetUniqueId(&id), 0);
  torch::Tensor bytes = torch::from_blob(&id, {static_cast<int64_t>(sizeof(id))}, torch::kByte);
  bootstrap.broadcast(bytes, 0);  // the id travels over the CPU world (MPI or Gloo)
  TRIAX_NCCL_CHECK(ncclCommInitRank(&state->comm, state->size, id, state->rank), state->rank);
  TRIAX_CUDA_CHECK(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking));
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(std::move(state)));
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {}

NcclCommunicator::~NcclCommunicator() {
  if (state_->comm != nullptr) {
    if (flight::abandoning()) {
      ncclCommAbort(state_->comm);
    } else {
      ncclCommDestroy(state_->comm);
    }
  }
  if (state_->stream != nullptr) cudaStreamDestroy(state_->stream);
}

int NcclCommunicator::rank() const {
  return state_->rank;
}
int NcclCommunicator::size() const {
  return state_->size;
}

// Orders this communicator's stream after the work already queued for `tensor` on the stream
// that produced it (torch's current stream), so no operation reads a tensor not yet written.
static void after_producer(const torch::Tensor& tensor, cudaStream_t stream) {
  cudaStream_t producer = current_torch_stream(tensor.device().index());
  cudaEvent_t ready;
  TRIAX_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  TRIAX_CUDA_CHECK(cudaEventRecord(ready, producer));
  TRIAX_CUDA_CHECK(cudaStreamWaitEvent(stream, ready, 0));
  cudaEventDestroy(ready);
}

WorkPtr NcclCommunicator::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  check_cuda(tensor, "all_reduce");
  const uint64_t id = record("all-reduce", -1, -1, bytes_of(tensor));
  after_producer(tensor, state_->stream);
  TRIAX_NCCL_CHECK(
      ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                    nccl_type(tensor.scalar_type()), nccl_op(op), state_->comm, state_->stream),
      state_->rank);
  return nccl_work(*state_, id, std::vector<torch::Tensor>{tensor});
}

WorkPtr NcclCommunicator::all_gather_async(torch::Tensor output, torch::Tensor input) {
  check_cuda(input, "all_gather");
  check_cuda(output, "all_gather");
  check_stacked(output, input, "all_gather");
  const uint64_t id = record("all-gather", -1, -1, bytes_of(output));
  after_producer(input, state_->stream);
  TRIAX_NCCL_CHECK(
      ncclAllGather(input.data_ptr(), output.data_ptr(), static_cast<size_t>(input.numel()),
                    nccl_type(input.scalar_type()), state_->comm, state_->stream),
      state_->rank);
  return nccl_work(*state_, id, std::vector<torch::Tensor>{input, output});
}

WorkPtr NcclCommunicator::reduce_scatter_async(torch::Tensor output, torch::Tensor input,
                                               ReduceOp op) {
  check_cuda(input, "reduce_scatter");
  check_cuda(output, "reduce_scatter");
  check_stacked(input, output, "reduce_scatter");
  const uint64_t id = record("reduce-scatter", -1, -1, bytes_of(input));
  after_producer(input, state_->stream);
  TRIAX_NCCL_CHECK(
      ncclReduceScatter(input.data_ptr(), output.data_ptr(), static_cast<size_t>(output.numel()),
                        nccl_type(input.scalar_type()), nccl_op(op), state_->comm, state_->stream),
      state_->rank);
  return nccl_work(*state_, id, std::vector<torch::Tensor>{input, output});
}

WorkPtr NcclCommunicator::broadcast_async(torch::Tensor tensor, int root) {
  check_cuda(tensor, "broadcast");
  check_peer(root, "broadcast");
  const uint64_t id = record("broadcast", -1, -1, bytes_of(tensor));
  after_producer(tensor, state_->stream);
  TRIAX_NCCL_CHECK(
      ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                    nccl_type(tensor.scalar_type()), root, state_->comm, state_->stream),
      state_->rank);
  return nccl_work(*state_, id, std::vector<torch::Tensor>{tensor});
}

// NCCL matches point-to-point operations by order per peer, not by tag: the pipeline executor
// posts them in the same order on both sides, which is what its schedule check proves.
WorkPtr NcclCommunicator::isend(torch::Tensor tensor, int dst, int tag) {
  check_cuda(tensor, "isend");
  check_peer(dst, "isend");
  const uint64_t id = record("send", dst, tag, bytes_of(tensor));
  after_producer(tensor, state_->stream);
  TRIAX_NCCL_CHECK(ncclSend(tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                            nccl_type(tensor.scalar_type()), dst, state_->comm, state_->stream),
                   state_->rank);
  return nccl_work(*state_, id, std::vector<torch::Tensor>{tensor});
}

WorkPtr NcclCommunicator::irecv(torch::Tensor tensor, int src, int tag) {
  check_cuda(tensor, "irecv");
  check_peer(src, "irecv");
  const uint64_t id = record("recv", src, tag, bytes_of(tensor));
  after_producer(tensor, state_->stream);
  TRIAX_NCCL_CHECK(ncclRecv(tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                            nccl_type(tensor.scalar_type()), src, state_->comm, state_->stream),
                   state_->rank);
  return nccl_work(*state_, id, std::vector<torch::Tensor>{tensor});
}

WorkPtr NcclCommunicator::all_to_all_async(torch::Tensor output, torch::Tensor input, int tag) {
  check_cuda(input, "all_to_all");
  check_cuda(output, "all_to_all");
  TRIAX_CHECK(input.size(0) % state_->size == 0 && output.sizes() == input.sizes() &&
                  input.is_contiguous() && output.is_contiguous(),
              "all_to_all: contiguous input and output of one shape, dim 0 divisible by ",
              state_->size);
  const uint64_t id = record("all-to-all", -1, tag, bytes_of(input));
  after_producer(input, state_->stream);
  const int64_t chunk = input.size(0) / state_->size;
  const auto count = static_cast<size_t>(input.numel() / state_->size);
  // One group: each send may then start before every receive is posted.
  TRIAX_NCCL_CHECK(ncclGroupStart(), state_->rank);
  for (int peer = 0; peer < state_->size; ++peer) {
    TRIAX_NCCL_CHECK(ncclSend(input.narrow(0, peer * chunk, chunk).data_ptr(), count,
                              nccl_type(input.scalar_type()), peer, state_->comm, state_->stream),
                     state_->rank);
    TRIAX_NCCL_CHECK(ncclRecv(output.narrow(0, peer * chunk, chunk).data_ptr(), count,
                              nccl_type(output.scalar_type()), peer, state_->comm, state_->stream),
                     state_->rank);
  }
  TRIAX_NCCL_CHECK(ncclGroupEnd(), state_->rank);
  return nccl_work(*state_, id, std::vector<torch::Tensor>{input, output});
}

WorkPtr NcclCommunicator::barrier_async() {
  // NCCL has no barrier: an all-reduce of one element is one.
  torch::Tensor one = torch::ones(
      {1}, torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA, state_->device));
  return all_reduce_async(one, ReduceOp::kSum);
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  auto state = std::make_unique<State>();
  state->device = state_->device;
  TRIAX_NCCL_CHECK(ncclCommSplit(state_->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key,
                                 &state->comm, nullptr),
                   state_->rank);
  if (color < 0 || state->comm == nullptr) return nullptr;
  TRIAX_NCCL_CHECK(ncclCommUserRank(state->comm, &state->rank), state_->rank);
  TRIAX_NCCL_CHECK(ncclCommCount(state->comm, &state->size), state_->rank);
  TRIAX_CUDA_CHECK(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking));
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(std::move(state)));
}

}  // namespace triax
