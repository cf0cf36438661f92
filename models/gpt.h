// defines: triax::GptOptions, triax::Gpt, triax::GptImpl, triax::GptBlock,
//          triax::check_gpt_layout
//
// The GPT family (GPT-2's shape) as a preset of the one transformer (models/transformer.h):
// learned positions, LayerNorm, one fused qkv projection, biases on every projection, the MLP's
// exact (erf) GELU or GPT-2's tanh approximation (model.activation), a tied head by default.
#pragma once

#include <string>

#include "core/config.h"
#include "models/model_keys.h"
#include "models/transformer.h"
#include "models/transformer_layout.h"

namespace triax {

/// Throws ConfigError (on every rank, before communication) when the GPT of `config` cannot be
/// laid out: heads not divisible by parallel.tensor, hidden not divisible by heads, ...
void check_gpt_layout(const Config& config);

struct GptOptions : TransformerOptions {
  GptOptions();  ///< the preset, at the default sizes

  /// The whole model of the `model:` section, with `seed`; `keys` records each model.* key read
  /// (models/model_keys.h).
  static GptOptions from_config(const ModelConfig& model, uint64_t seed, ModelKeys* keys = nullptr);
};

using GptBlock = TransformerBlock;
using GptImpl = TransformerImpl;
using Gpt = Transformer;

}  // namespace triax
