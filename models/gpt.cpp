#include "models/gpt.h"

#include "core/error.h"
#include "models/transformer_layout.h"

namespace triax {

void check_gpt_layout(const Config& config) {
  check_transformer_layout(config, GptOptions::from_config(config.model, 0));
}

GptOptions::GptOptions() {
  norm = NormKind::kLayerNorm;
  norm_eps = 1e-5;  // LibTorch's and GPT-2's LayerNorm epsilon (model.norm_eps is the Llama's)
  positions = PositionKind::kLearned;
  fused_qkv = true;
  qkv_bias = true;
  linear_bias = true;
  mlp = MlpKind::kGelu;
  tie_embeddings = true;
  names = BlockNames{"ln1", "qkv", "q", "k", "v", "proj", "ln2", "gate", "fc", "fc_out"};
}

GptOptions GptOptions::from_config(const ModelConfig& model, uint64_t seed, ModelKeys* keys) {
  ModelKeys unused;
  ModelKeys& k = keys != nullptr ? *keys : unused;
  GptOptions options;
  options.read_common(model, seed, k);
  options.mlp = k.read("model.activation", model.activation) == Activation::kGeluTanh
                    ? MlpKind::kGeluTanh
                    : MlpKind::kGelu;
  return options;
}

}  // namespace triax
