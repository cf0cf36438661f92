#include "models/activation_checkpoint.h"

#include <cstdint>

#include "core/autocast_scope.h"

namespace triax {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// What backward needs besides the inputs: the function (a copy: the caller's may be gone), the
// dropout streams and their positions before the first run. Kept in the autograd context as a
// capsule, so it is freed with the graph whether or not backward runs.
struct Recompute : torch::CustomClassHolder {
  Recompute(Recomputed f, TpDropout* d)
      : fn(std::move(f)), dropout(d), streams(d->state()), bf16(AutocastScope::active()) {}
  Recomputed fn;
  TpDropout* dropout;
  std::vector<torch::Tensor> streams;
  bool bf16;  ///< the first run was under bf16 autocast: so must the second be
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // Autograd's Function takes no undefined tensors as inputs: a missing b or c comes in as a
  // second reference to a (no copy), and `arity` says how many are real.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b,
                               const torch::Tensor& c, int64_t arity, const Recomputed* fn,
                               TpDropout* dropout) {
    ctx->saved_data["recompute"] =
        c10::IValue::make_capsule(c10::make_intrusive<Recompute>(*fn, dropout));
    ctx->saved_data["arity"] = arity;
    ctx->save_for_backward({a, b, c});
    // Autograd is off inside a Function's forward: nothing fn computes is kept.
    return (*fn)(a, arity > 1 ? b : torch::Tensor(), arity > 2 ? c : torch::Tensor());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto recompute =
        c10::static_intrusive_pointer_cast<Recompute>(ctx->saved_data["recompute"].toCapsule());
    const auto saved = ctx->get_saved_variables();
    const int64_t arity = ctx->saved_data["arity"].toInt();
    std::vector<torch::Tensor> inputs(3);
    for (int64_t k = 0; k < arity; ++k) {
      const torch::Tensor& t = saved[static_cast<size_t>(k)];
      inputs[static_cast<size_t>(k)] = t.detach().requires_grad_(t.requires_grad());
    }
    const std::vector<torch::Tensor> now = recompute->dropout->state();
    recompute->dropout->set_state(recompute->streams);
    torch::Tensor out;
    {
      torch::AutoGradMode enable(true);
      const AutocastScope precision(recompute->bf16);  // autocast is per thread, not per graph
      out = recompute->fn(inputs[0], inputs[1], inputs[2]);
    }
    recompute->dropout->set_state(now);
    torch::autograd::backward({out}, {grads[0]});
    tensor_list result;
    for (const auto& t : inputs) result.push_back(t.defined() ? t.grad() : torch::Tensor());
    result.push_back(torch::Tensor());  // arity
    result.push_back(torch::Tensor());  // fn
    result.push_back(torch::Tensor());  // dropout
    return result;
  }
};

}  // namespace

torch::Tensor checkpointed(const Recomputed& fn, TpDropout& dropout, const torch::Tensor& a,
                           const torch::Tensor& b, const torch::Tensor& c) {
  const auto needs_grad = [](const torch::Tensor& t) { return t.defined() && t.requires_grad(); };
  if (!torch::GradMode::is_enabled() || !(needs_grad(a) || needs_grad(b) || needs_grad(c))) {
    return fn(a, b, c);
  }
  const int64_t arity = c.defined() ? 3 : b.defined() ? 2 : 1;
  return CheckpointFunction::apply(a, b.defined() ? b : a, c.defined() ? c : a, arity, &fn,
                                   &dropout);
}

}  // namespace triax
