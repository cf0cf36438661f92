#include "parallel/tp/tp_dropout.h"

#include "core/error.h"

#include <ATen/CPUGeneratorImpl.h>

namespace triax {

TpDropout::TpDropout(uint64_t seed, int tp_rank)
    : shared_(at::detail::createCPUGenerator(seed)),
      tp_local_(at::detail::createCPUGenerator(seed + kTpStreamOffset +
                                               static_cast<uint64_t>(tp_rank))) {}

torch::Tensor TpDropout::shared(const torch::Tensor& x, double p, bool training) {
  return apply(x, p, training, shared_);
}

torch::Tensor TpDropout::tp_local(const torch::Tensor& x, double p, bool training) {
  return apply(x, p, training, tp_local_);
}

torch::Tensor TpDropout::apply(const torch::Tensor& x, double p, bool training,
                               at::Generator& gen) {
  if (!training || p == 0.0) return x;
  // torch::dropout has no generator argument; draw the keep-mask from ours. The streams are CPU
  // generators on every device, so a CUDA run drops the elements a CPU run drops (and a
  // checkpoint's stream positions mean the same on both); the mask then moves to x's device.
  const torch::Tensor keep =
      torch::empty_like(x, torch::TensorOptions(torch::kFloat).device(torch::kCPU))
          .bernoulli_(1.0 - p, gen)
          .to(x.device());
  return x * keep.to(x.dtype()) / (1.0 - p);
}

std::vector<torch::Tensor> TpDropout::state() const {
  return {shared_.get_state(), tp_local_.get_state()};
}

void TpDropout::set_state(const std::vector<torch::Tensor>& state) {
  TRIAX_CHECK(state.size() == 2, "dropout state holds ", state.size(), " streams, expected 2");
  shared_.set_state(state[0]);
  tp_local_.set_state(state[1]);
}

}  // namespace triax
