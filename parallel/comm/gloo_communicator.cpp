#include "parallel/comm/gloo_communicator.h"

#include "parallel/comm/polled_work.h"

// Debian's LibTorch is built with Gloo (its CMake target defines USE_C10D_GLOO).
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <functional>

#include "core/error.h"
#include "core/flight_recorder.h"

namespace triax {

struct GlooCommunicator::State {
  c10::intrusive_ptr<c10d::Store> store;  // the store this group's prefix lives under
  std::string prefix;                     // unique per group: splits derive theirs from it
  c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> options;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  int rank = 0;
  int size = 1;
  int splits = 0;  // splits made from this group so far (the same count on every member)
};

namespace {

std::chrono::milliseconds timeout_of(int seconds) {
  return std::chrono::milliseconds(1000L * seconds);
}

c10d::ReduceOp gloo_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:  // Gloo has no average: sum, then divide on completion
      return c10d::ReduceOp::SUM;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
  }
  return c10d::ReduceOp::SUM;
}

// Gloo works on contiguous tensors: a non-contiguous argument travels through a contiguous copy
// that is written back when the operation completes.
torch::Tensor contiguous_buffer(const torch::Tensor& tensor) {
  return tensor.is_contiguous() ? tensor : tensor.contiguous();
}

bool is_16bit_float(const torch::Tensor& t) {
  return t.scalar_type() == torch::kHalf || t.scalar_type() == torch::kBFloat16;
}

// Gloo moves no bfloat16 either: 16-bit floats travel as their bytes. Returns a flat contiguous
// tensor Gloo accepts; `back(buffer, like)` is the same bytes in `like`'s dtype and shape.
torch::Tensor transport_buffer(const torch::Tensor& tensor) {
  const torch::Tensor flat = contiguous_buffer(tensor).view({-1});
  return is_16bit_float(tensor) ? flat.view(torch::kByte) : flat;
}
torch::Tensor back(const torch::Tensor& buffer, const torch::Tensor& like) {
  return (is_16bit_float(like) ? buffer.view(like.scalar_type()) : buffer).view(like.sizes());
}

// Gloo cannot reduce 16-bit floats: they are reduced in float32, as the MPI backend does.
torch::Tensor reduction_buffer(const torch::Tensor& tensor) {
  return is_16bit_float(tensor) ? tensor.to(torch::kFloat) : contiguous_buffer(tensor);
}

// Gloo progresses in its own threads and waits on a condition variable with its own deadline
// (comm.timeout_s): the work blocks in it (Note [Watchdog] in polled_work.h).
class GlooCompletion : public Completion {
 public:
  explicit GlooCompletion(c10::intrusive_ptr<c10d::Work> work) : work_(std::move(work)) {}
  bool test() override {
    if (!work_->isCompleted()) return false;
    work_->wait();  // rethrows Gloo's error, if the operation ended in one
    return true;
  }
  bool blocks() const override { return true; }
  bool must_finish() const override { return false; }
  void block() override { work_->wait(); }
  bool is_timeout(const std::exception& e) const override {
    const std::string what = e.what();
    return what.find("imed out") != std::string::npos || what.find("imeout") != std::string::npos;
  }
  std::string library() const override { return "Gloo"; }
  std::string failure_hint() const override {
    return " (a peer's connection closed: that rank ended or crashed)";
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};

WorkPtr gloo_work(uint64_t flight_id, c10::intrusive_ptr<c10d::Work> work,
                  std::function<void()> on_complete, std::vector<torch::Tensor> keep_alive = {}) {
  return std::make_shared<PolledWork>(std::make_unique<GlooCompletion>(std::move(work)), flight_id,
                                      std::move(on_complete), std::move(keep_alive));
}

// A Work that runs `finish` once `inner` has completed.
struct Chained : Work {
  WorkPtr inner;
  std::function<void()> finish;
  bool done = false;
  void wait() override {
    if (done) return;
    inner->wait();
    finish();
    done = true;
  }
  bool is_completed() override {
    if (!done && inner->is_completed()) wait();
    return done;
  }
};

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_group(
    const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix, int rank, int size,
    const c10::intrusive_ptr<c10d::ProcessGroupGloo::Options>& options) {
  auto scoped = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(scoped, rank, size, options);
}

bool is_loopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "localhost" || address == "::1";
}

}  // namespace

std::unique_ptr<GlooCommunicator> GlooCommunicator::world(const LaunchEnv& launch, int timeout_s) {
  if (launch.master_addr.empty() || launch.master_port <= 0) {
    throw ConfigError(
        str("comm.backend: tcp needs MASTER_ADDR and MASTER_PORT (torchrun sets "
            "them; by hand: MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 RANK=r "
            "WORLD_SIZE=n); this process has MASTER_ADDR='",
            launch.master_addr, "' MASTER_PORT=", launch.master_port));
  }
  auto state = std::make_shared<State>();
  state->rank = launch.rank;
  state->size = launch.world_size;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(launch.master_port);
    options.timeout = timeout_of(timeout_s);
    std::string prefix = "triax";
    if (launch.agent_store) {
      options.isServer = false;  // torchrun's agent serves it
      prefix = str("/worker/attempt_", launch.restart_count, "/triax");
    } else {
      options.isServer = launch.rank == 0;
      options.numWorkers = static_cast<std::size_t>(launch.world_size);
      options.waitWorkers = true;
    }
    state->store = c10::make_intrusive<c10d::TCPStore>(launch.master_addr, options);
    state->prefix = prefix;
    state->options = c10d::ProcessGroupGloo::Options::create(timeout_of(timeout_s));
    // All ranks on one node talk over loopback; across nodes Gloo binds the address the host
    // name resolves to (GLOO_SOCKET_IFNAME picks an interface, as in PyTorch).
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    state->options->devices.push_back(
        interface != nullptr ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
        : is_loopback(launch.master_addr)
            ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
            : c10d::ProcessGroupGloo::createDefaultDevice());
    state->options->threads = 2;
    state->group = make_group(state->store, state->prefix + "/world", state->rank, state->size,
                              state->options);
  } catch (const std::exception& e) {
    throw Error(str("comm.backend tcp: rank ", launch.rank, " of ", launch.world_size,
                    " could not join the TCP store at ", launch.master_addr, ":",
                    launch.master_port, " within comm.timeout_s=", timeout_s,
                    " s (are all ranks started, and is the "
                    "address reachable?): ",
                    e.what()));
  }
  return std::make_unique<GlooCommunicator>(std::move(state));
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<State> state) : state_(std::move(state)) {}
GlooCommunicator::~GlooCommunicator() = default;

int GlooCommunicator::rank() const {
  return state_->rank;
}
int GlooCommunicator::size() const {
  return state_->size;
}

WorkPtr GlooCommunicator::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  TRIAX_CHECK(op != ReduceOp::kAvg || tensor.is_floating_point(),
              "all_reduce avg needs a floating dtype, got ", tensor.scalar_type());
  // Gloo divides by the element count: an empty tensor raises SIGFPE in its collectives. There
  // is nothing to move, on any rank (every rank passes the same shape).
  if (tensor.numel() == 0) return std::make_shared<DoneWork>();
  torch::Tensor buffer = reduction_buffer(tensor);
  std::vector<torch::Tensor> tensors{buffer};
  c10d::AllreduceOptions options;
  options.reduceOp = gloo_op(op);
  const int size = state_->size;
  auto work = state_->group->allreduce(tensors, options);
  return gloo_work(record("all-reduce", -1, -1, bytes_of(tensor)), work,
                   [tensor, buffer, op, size]() mutable {
                     if (op == ReduceOp::kAvg) buffer.div_(size);
                     if (!buffer.is_same(tensor)) tensor.copy_(buffer);
                   });
}

WorkPtr GlooCommunicator::all_gather_async(torch::Tensor output, torch::Tensor input) {
  check_stacked(output, input, "all_gather");
  if (input.numel() == 0) return std::make_shared<DoneWork>();  // see all_reduce_async
  torch::Tensor in = transport_buffer(input);
  torch::Tensor out = transport_buffer(torch::empty(output.sizes(), output.options()));
  std::vector<std::vector<torch::Tensor>> outputs(1);
  const int64_t chunk = in.numel();  // flat: rank r's rows are elements [r chunk, (r+1) chunk)
  for (int r = 0; r < state_->size; ++r) outputs[0].push_back(out.narrow(0, r * chunk, chunk));
  std::vector<torch::Tensor> inputs{in};
  auto work = state_->group->allgather(outputs, inputs);
  return gloo_work(
      record("all-gather", -1, -1, bytes_of(output)),

      work, [output, out]() mutable { output.copy_(back(out, output)); },
      std::vector<torch::Tensor>{in});
}

WorkPtr GlooCommunicator::reduce_scatter_async(torch::Tensor output, torch::Tensor input,
                                               ReduceOp op) {
  check_stacked(input, output, "reduce_scatter");
  // Gloo has no reduce-scatter: all-reduce a copy and keep this rank's chunk.
  torch::Tensor reduced = input.contiguous().clone();
  auto all = all_reduce_async(reduced, op);
  const int64_t n = output.size(0);
  const int rank = state_->rank;
  auto chained = std::make_shared<Chained>();
  chained->inner = all;
  chained->finish = [output, reduced, n, rank]() mutable {
    output.copy_(reduced.narrow(0, rank * n, n));
  };
  return chained;
}

WorkPtr GlooCommunicator::broadcast_async(torch::Tensor tensor, int root) {
  check_peer(root, "broadcast");
  if (tensor.numel() == 0) return std::make_shared<DoneWork>();  // see all_reduce_async
  torch::Tensor buffer = transport_buffer(tensor);
  std::vector<torch::Tensor> tensors{buffer};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  auto work = state_->group->broadcast(tensors, options);
  return gloo_work(record("broadcast", -1, -1, bytes_of(tensor)), work, [tensor, buffer]() mutable {
    const torch::Tensor result = back(buffer, tensor);
    if (!result.is_same(tensor)) tensor.copy_(result);
  });
}

WorkPtr GlooCommunicator::isend(torch::Tensor tensor, int dst, int tag) {
  check_peer(dst, "isend");
  torch::Tensor buffer = transport_buffer(tensor);
  std::vector<torch::Tensor> tensors{buffer};
  auto work = state_->group->send(tensors, dst, tag);
  return gloo_work(record("send", dst, tag, bytes_of(tensor)), work, nullptr,
                   std::vector<torch::Tensor>{buffer});
}

WorkPtr GlooCommunicator::irecv(torch::Tensor tensor, int src, int tag) {
  check_peer(src, "irecv");
  torch::Tensor buffer = transport_buffer(tensor);
  std::vector<torch::Tensor> tensors{buffer};
  auto work = state_->group->recv(tensors, src, tag);
  return gloo_work(record("recv", src, tag, bytes_of(tensor)), work, [tensor, buffer]() mutable {
    const torch::Tensor result = back(buffer, tensor);
    if (!result.is_same(tensor)) tensor.copy_(result);
  });
}

WorkPtr GlooCommunicator::barrier_async() {
  if (state_->size == 1) return std::make_shared<DoneWork>();
  return gloo_work(record("barrier", -1, -1, 0), state_->group->barrier(), nullptr);
}

std::unique_ptr<Communicator> GlooCommunicator::split(int color, int key) {
  torch::Tensor mine = torch::tensor({static_cast<int64_t>(color), static_cast<int64_t>(key)});
  const torch::Tensor all = all_gather(mine.view({1, 2}));
  const int index = state_->splits++;
  if (color < 0) return nullptr;
  std::vector<std::pair<int64_t, int>> members;  // (key, parent rank) of my color
  for (int r = 0; r < state_->size; ++r) {
    if (all[r][0].item<int64_t>() == color) members.emplace_back(all[r][1].item<int64_t>(), r);
  }
  std::sort(members.begin(), members.end());
  auto child = std::make_shared<State>();
  child->store = state_->store;
  child->prefix = str(state_->prefix, "/s", index, "c", color);
  child->options = state_->options;
  child->size = static_cast<int>(members.size());
  for (int i = 0; i < child->size; ++i) {
    if (members[static_cast<size_t>(i)].second == state_->rank) child->rank = i;
  }
  child->group = make_group(child->store, child->prefix, child->rank, child->size, child->options);
  return std::make_unique<GlooCommunicator>(std::move(child));
}

}  // namespace triax
