#include "models/transformer_layout.h"

#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace triax {

std::string valid_divisors(int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return join(divisors, ", ");
}

void check_transformer_layout(const Config& config, const TransformerOptions& o) {
  const ModelConfig& m = config.model;
  const int64_t tp = config.parallel.tensor;
  if (m.hidden % m.heads != 0) {
    throw ConfigError(str("model.heads: ", m.heads, " does not divide model.hidden=", m.hidden,
                          " (valid: ", valid_divisors(m.hidden), ")"));
  }
  if (m.heads % tp != 0) {
    throw ConfigError(str("parallel.tensor: ", tp, " does not divide model.heads=", m.heads,
                          " (valid: ", valid_divisors(m.heads), ")"));
  }
  if (config.parallel.sequence && tp == 1) {
    throw ConfigError(
        "parallel.sequence: true splits the sequence over tensor-parallel ranks, but "
        "parallel.tensor is 1 (set parallel.tensor > 1, or parallel.sequence: false)");
  }
  if (config.parallel.sequence && m.seq_len % tp != 0) {
    throw ConfigError(str("parallel.sequence: true needs model.seq_len=", m.seq_len,
                          " divisible by parallel.tensor=", tp,
                          " (valid tensor sizes: ", valid_divisors(m.seq_len), ")"));
  }
  if (config.parallel.pipeline > m.layers) {
    throw ConfigError(str("parallel.pipeline: ", config.parallel.pipeline,
                          " stages exceed model.layers=", m.layers, " (valid: 1 to ", m.layers,
                          ")"));
  }
  // Grouped-query attention and rotary positions add their own rules.
  const int64_t kv = o.kv_head_count();
  if (m.heads % kv != 0) {
    throw ConfigError(str("model.kv_heads: ", kv, " does not divide model.heads=", m.heads,
                          " (valid: ", valid_divisors(m.heads), ")"));
  }
  if (kv % tp != 0) {
    throw ConfigError(str("parallel.tensor: ", tp, " does not divide model.kv_heads=", kv,
                          ": each tensor-parallel rank must hold whole key/value heads (valid: ",
                          valid_divisors(kv), ")"));
  }
  if (o.positions == PositionKind::kRotary && (m.hidden / m.heads) % 2 != 0) {
    throw ConfigError(str("model.hidden / model.heads = ", m.hidden / m.heads,
                          " is odd; rotary embeddings rotate pairs (valid: an even head size)"));
  }
}

}  // namespace triax
