#include "train/matmul_peak.h"

#include <torch/torch.h>

#include <chrono>

#include "core/bf16_matmul.h"

namespace triax {

double measure_matmul_tflops(const MixedPrecision& precision) {
  constexpr int64_t n = 1024;
  torch::NoGradGuard no_grad;
  const auto dtype = precision.matmul_dtype();
  const torch::Tensor a = torch::ones({n, n}, dtype);
  const torch::Tensor b = torch::ones({n, n}, dtype);
  torch::Tensor c = mixed_mm(a, b);  // warm-up: BLAS thread pool and page faults
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    c = mixed_mm(a, b);
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * n * n * n / best / 1e12;
}

}  // namespace triax
