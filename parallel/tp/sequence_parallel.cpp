#include "parallel/tp/sequence_parallel.h"

#include <cstdint>

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "parallel/tp/autograd_comm.h"

namespace triax {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The communicator stacks along dim 0: move the sequence there and back.
torch::Tensor all_gather_dim1(const torch::Tensor& x, Communicator& tp) {
  return tp.all_gather(x.transpose(0, 1).contiguous()).transpose(0, 1).contiguous();
}
torch::Tensor reduce_scatter_dim1(const torch::Tensor& x, Communicator& tp) {
  TRIAX_CHECK(x.size(1) % tp.size() == 0, "sequence length ", x.size(1),
              " is not divisible by tp=", tp.size());
  return tp.reduce_scatter(x.transpose(0, 1).contiguous(), ReduceOp::kSum)
      .transpose(0, 1)
      .contiguous();
}
torch::Tensor slice_dim1(const torch::Tensor& x, Communicator& tp) {
  TRIAX_CHECK(x.size(1) % tp.size() == 0, "sequence length ", x.size(1),
              " is not divisible by tp=", tp.size());
  const int64_t part = x.size(1) / tp.size();
  return x.narrow(1, tp.rank() * part, part).contiguous();
}

struct GatherSequence : torch::autograd::Function<GatherSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Communicator* tp) {
    save_comm(ctx, *tp);
    return all_gather_dim1(x, *tp);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {reduce_scatter_dim1(grads[0], saved_comm(ctx)), torch::Tensor()};
  }
};

struct ReduceScatterSequence : torch::autograd::Function<ReduceScatterSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Communicator* tp) {
    save_comm(ctx, *tp);
    return reduce_scatter_dim1(x, *tp);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {all_gather_dim1(grads[0], saved_comm(ctx)), torch::Tensor()};
  }
};

struct ScatterSequence : torch::autograd::Function<ScatterSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Communicator* tp) {
    save_comm(ctx, *tp);
    return slice_dim1(x, *tp);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {all_gather_dim1(grads[0], saved_comm(ctx)), torch::Tensor()};
  }
};

struct GatheredLinear : torch::autograd::Function<GatheredLinear> {
  // A Function takes no undefined tensor: without a bias, `bias` is the weight again, unused.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               bool has_bias, Communicator* tp) {
    save_comm(ctx, *tp);
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = has_bias;
    // Under bf16 autocast the linear below computes in bf16; backward, which runs outside the
    // autocast scope, must compute in the same dtype and hand back fp32 gradients.
    const torch::Tensor out =
        mixed_linear(all_gather_dim1(x, *tp), weight, has_bias ? bias : torch::Tensor());
    ctx->saved_data["compute"] = static_cast<int64_t>(out.scalar_type());
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Communicator& tp = saved_comm(ctx);
    const auto saved = ctx->get_saved_variables();
    const auto compute = static_cast<torch::ScalarType>(ctx->saved_data["compute"].toInt());
    const torch::Tensor grad = grads[0].to(compute).contiguous();
    const torch::Tensor grad_2d = grad.reshape({-1, grad.size(-1)});
    // Only what is asked: a split backward (schedules/split_backward.h) asks for the input's
    // gradient first and the weight's later, and each costs a collective over tp.
    torch::Tensor grad_input, grad_weight, grad_bias;
    if (ctx->needs_input_grad(1)) {
      // gathered again, not kept
      const torch::Tensor full = all_gather_dim1(saved[0], tp).to(compute);
      grad_weight =
          mixed_mm(grad_2d.t(), full.reshape({-1, full.size(-1)})).to(saved[1].scalar_type());
    }
    if (ctx->needs_input_grad(0)) {
      const torch::Tensor weight = saved[1].to(compute);
      grad_input = reduce_scatter_dim1(mixed_matmul(grad, weight), tp).to(saved[0].scalar_type());
    }
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) {
      grad_bias = grad_2d.sum(0).to(saved[1].scalar_type());
    }
    return {grad_input, grad_weight, grad_bias, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor gathered_linear(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias, Communicator& tp) {
  if (tp.size() == 1) return mixed_linear(x, weight, bias);
  return GatheredLinear::apply(x, weight, bias.defined() ? bias : weight, bias.defined(), &tp);
}

torch::Tensor gather_sequence(const torch::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : GatherSequence::apply(x, &tp);
}
torch::Tensor reduce_scatter_sequence(const torch::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ReduceScatterSequence::apply(x, &tp);
}
torch::Tensor scatter_sequence(const torch::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ScatterSequence::apply(x, &tp);
}

}  // namespace triax
