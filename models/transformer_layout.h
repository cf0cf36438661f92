// defines: triax::check_transformer_layout, triax::valid_divisors
//
// Whether a transformer (models/transformer.h) can take the configured layout, asked of every
// family through its spec (ModelSpec::check_layout): heads divide hidden, tp divides the heads
// and the kv heads, sequence parallelism's and the pipeline's needs, rotary positions' even head
// size. Thrown on every rank before any communication, naming the key, the value, the rule and
// what would be valid.
#pragma once

#include <cstdint>
#include <string>

#include "core/config.h"
#include "models/transformer.h"

namespace triax {

/// Throws ConfigError when the model of `config`, read by its family's preset into `options`,
/// cannot be laid out as `config` asks.
void check_transformer_layout(const Config& config, const TransformerOptions& options);

/// "1, 2, 4, 8": the divisors of n, for messages that say what would be valid.
std::string valid_divisors(int64_t n);

}  // namespace triax
