#include "models/transformer_flops.h"

namespace triax {

double transformer_flops_per_token(const TransformerOptions& o) {
  const double h = static_cast<double>(o.hidden);
  const double kv = static_cast<double>(o.kv_head_count() * (o.hidden / o.heads));
  const double mlp_matrices = o.mlp == MlpKind::kSwiGlu ? 3 : 2;
  const double layer =
      2 * h * h + 2 * h * kv + mlp_matrices * h * static_cast<double>(o.mlp_width());
  const double matmuls = static_cast<double>(o.layers) * layer + h * static_cast<double>(o.vocab);
  return 6 * matmuls + 12.0 * static_cast<double>(o.layers) * h * static_cast<double>(o.seq_len);
}

}  // namespace triax
