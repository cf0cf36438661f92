// defines: triax::FusedAdamW
//
// LibTorch's AdamW with its update done in one pass over each parameter. LibTorch's step runs
// nine tensor ops per parameter (decay, two moment updates, sqrt, divide, add eps, addcdiv), each
// a full pass over the parameter's memory; this reads p, g, m, v once and writes p, m, v once,
// with the same formula and the same order of operations:
//   p *= 1 - lr·wd;  m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;
//   p -= lr / (1-β1^t) · m / (sqrt(v) / sqrt(1-β2^t) + eps)
// (results differ from LibTorch's only where its vectorised kernels fuse a multiply-add).
// The state (step, exp_avg, exp_avg_sq per parameter) is LibTorch's own, so checkpoints and
// resumption are unchanged. On a GPU (run.device: cuda) the same formula runs as LibTorch's
// multi-tensor kernels over all parameters of a group at once (adamw_update_lists: a few
// launches per step, where LibTorch's step launches nine kernels per parameter). Parameters that
// are neither, or AMSGrad, take LibTorch's step.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace triax {

/// AdamW's per-step constants for one parameter group at step t (as floats, as LibTorch uses).
struct AdamWCoefficients {
  float decay;  // 1 - lr * weight_decay
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float sqrt_bias2;  // sqrt(1 - beta2^t)
  float eps;
  float step_size;  // lr / (1 - beta1^t)
  bool decays;
};
AdamWCoefficients adamw_coefficients(const torch::optim::AdamWOptions& options, int64_t step);

/// The update of elements [0, n) of a parameter p with gradient g and moments m, v, in place.
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n,
                  const AdamWCoefficients& c);

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;

  /// Parameters at one step on a GPU, with their gradients and moments, in the same order.
  struct Lists {
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
  };

 private:
  /// No AMSGrad, and every parameter with a gradient (and the gradient) of `kind`.
  bool fusable(bool (*kind)(const torch::Tensor&)) const;
  /// The parameter's state, made as LibTorch makes it at its first step.
  torch::optim::AdamWParamState& state_of(const torch::Tensor& p);
};

/// The same update over lists of CUDA tensors by LibTorch's multi-tensor (_foreach) kernels.
void adamw_update_lists(FusedAdamW::Lists& lists, const AdamWCoefficients& c);

}  // namespace triax
