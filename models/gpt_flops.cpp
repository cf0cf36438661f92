#include "models/gpt_flops.h"

namespace triax {

double gpt_flops_per_token(const ModelConfig& model) {
  const double h = static_cast<double>(model.hidden);
  const double layers = static_cast<double>(model.layers);
  const double matmul_params = 12.0 * layers * h * h + h * static_cast<double>(model.vocab);
  return 6.0 * matmul_params + 12.0 * layers * h * static_cast<double>(model.seq_len);
}

}  // namespace triax
