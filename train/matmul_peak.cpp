#include "train/matmul_peak.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>

#include "core/bf16_matmul.h"

namespace triax {

double measure_matmul_tflops(const MixedPrecision& precision, const torch::Device& device) {
  // A GPU needs a product large enough to fill it (and its clocks to rise): 8192^3, random
  // operands (a constant matrix draws less power and runs faster than real data).
  const bool gpu = device.is_cuda();
  const int64_t n = gpu ? 8192 : 1024;
  const int rounds = gpu ? 10 : 3;
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions(precision.matmul_dtype()).device(device);
  const torch::Tensor a = gpu ? torch::randn({n, n}, options) : torch::ones({n, n}, options);
  const torch::Tensor b = gpu ? torch::randn({n, n}, options) : torch::ones({n, n}, options);
  const auto finish = [&] {
    if (gpu) torch::cuda::synchronize(device.index());
  };
  torch::Tensor c = mixed_mm(a, b);  // warm-up: BLAS thread pool and page faults, GPU clocks
  for (int i = 0; gpu && i < 3; ++i) c = mixed_mm(a, b);
  finish();
  double best = 1e30;
  for (int i = 0; i < rounds; ++i) {
    const auto start = std::chrono::steady_clock::now();
    c = mixed_mm(a, b);
    finish();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * n * n * n / best / 1e12;
}

}  // namespace triax
