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

namespace {

// Context parallelism's rules (parallel/cp): the head-tail split, and all-to-all's head split.
void check_context_layout(const Config& config, int64_t kv) {
  const ModelConfig& m = config.model;
  const int64_t cp = config.parallel.context, tp = config.parallel.tensor;
  if (cp == 1) return;
  if (m.seq_len % (2 * cp) != 0) {
    std::vector<int64_t> valid;
    for (int64_t c = 1; 2 * c <= m.seq_len; ++c) {
      if (m.seq_len % (2 * c) == 0) valid.push_back(c);
    }
    throw ConfigError(str("parallel.context: ", cp, " cuts every sequence into 2 x ", cp, " = ",
                          2 * cp, " chunks (rank r holds chunks r and ", 2 * cp - 1,
                          " - r, so causal attention costs every rank the same), but "
                          "model.seq_len=",
                          m.seq_len, " is not a multiple of ", 2 * cp,
                          " (valid context sizes: ", join(valid, ", "), ")"));
  }
  if (config.parallel.sequence && (m.seq_len / cp) % tp != 0) {
    throw ConfigError(str("parallel.sequence: true splits each rank's ", m.seq_len / cp,
                          " positions (model.seq_len=", m.seq_len, " / parallel.context=", cp,
                          ") over parallel.tensor=", tp,
                          ", which does not divide them (valid "
                          "tensor sizes: ",
                          valid_divisors(m.seq_len / cp), ")"));
  }
  if (config.parallel.context_mode == ContextMode::kAllToAll &&
      (m.heads % (cp * tp) != 0 || kv % (cp * tp) != 0)) {
    throw ConfigError(
        str("parallel.context_mode: all_to_all gives each of the context x tensor = ", cp, " x ",
            tp, " = ", cp * tp, " ranks whole heads, but model.heads=", m.heads, " and ", kv,
            " kv heads are not both divisible by ", cp * tp,
            " (valid: context_mode: ring, or a parallel.context whose product with "
            "tensor divides both)"));
  }
  if (m.dropout > 0) {
    throw ConfigError(
        str("model.dropout: ", m.dropout, " is not supported with parallel.context: ", cp,
            " yet (the dropout streams are not split over the cp group, and ring "
            "attention has no dropout); set model.dropout: 0 or parallel.context: 1"));
  }
}

}  // namespace

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
  check_context_layout(config, kv);
  if (o.positions == PositionKind::kRotary && (m.hidden / m.heads) % 2 != 0) {
    throw ConfigError(str("model.hidden / model.heads = ", m.hidden / m.heads,
                          " is odd; rotary embeddings rotate pairs (valid: an even head size)"));
  }
}

}  // namespace triax
