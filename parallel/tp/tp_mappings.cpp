#include "parallel/tp/tp_mappings.h"

#include <cstdint>

#include "core/error.h"
#include "parallel/tp/autograd_comm.h"

namespace triax {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

torch::Tensor summed(const torch::Tensor& x, Communicator& comm) {
  torch::Tensor out = x.clone(at::MemoryFormat::Contiguous);
  comm.all_reduce(out, ReduceOp::kSum);
  return out;
}

struct CopyToRegion : torch::autograd::Function<CopyToRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Communicator* comm) {
    save_comm(ctx, *comm);
    return x;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {summed(grads[0], saved_comm(ctx)), torch::Tensor()};
  }
};

struct ReduceFromRegion : torch::autograd::Function<ReduceFromRegion> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x, Communicator* comm) {
    return summed(x, *comm);
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return {grads[0], torch::Tensor()};
  }
};

struct GatherFromRegion : torch::autograd::Function<GatherFromRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Communicator* comm) {
    save_comm(ctx, *comm);
    return all_gather_last_dim(x, *comm);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Communicator& comm = saved_comm(ctx);
    return {split_last_dim(grads[0], comm.rank(), comm.size()).contiguous(), torch::Tensor()};
  }
};

struct ScatterToRegion : torch::autograd::Function<ScatterToRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Communicator* comm) {
    save_comm(ctx, *comm);
    return split_last_dim(x, comm->rank(), comm->size()).contiguous();
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {all_gather_last_dim(grads[0], saved_comm(ctx)), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor split_last_dim(const torch::Tensor& x, int rank, int size) {
  const int64_t full = x.size(-1);
  TRIAX_CHECK(full % size == 0, "last dim ", full, " is not divisible by tp=", size);
  const int64_t part = full / size;
  return x.narrow(-1, rank * part, part);
}

torch::Tensor all_gather_last_dim(const torch::Tensor& x, Communicator& tp) {
  // all_gather concatenates along dim 0: gather [1, ...] slabs, then lay them side by side.
  const torch::Tensor gathered = tp.all_gather(x.unsqueeze(0));
  return torch::cat(gathered.unbind(0), -1);
}

torch::Tensor copy_to_tp_region(const torch::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : CopyToRegion::apply(x, &tp);
}
torch::Tensor reduce_from_tp_region(const torch::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ReduceFromRegion::apply(x, &tp);
}
torch::Tensor gather_from_tp_region(const torch::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : GatherFromRegion::apply(x, &tp);
}
torch::Tensor scatter_to_tp_region(const torch::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ScatterToRegion::apply(x, &tp);
}

}  // namespace triax
