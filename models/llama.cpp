#include "models/llama.h"

#include "core/error.h"
#include "models/transformer_layout.h"

namespace triax {

void check_llama_layout(const Config& config) {
  check_transformer_layout(config, LlamaOptions::from_config(config.model, 0));
}

int64_t llama_intermediate_size(int64_t hidden, int64_t multiple_of) {
  const int64_t raw = 2 * (4 * hidden) / 3;
  return (raw + multiple_of - 1) / multiple_of * multiple_of;
}

LlamaOptions::LlamaOptions() {
  kv_heads = 4;
  intermediate = 352;
  norm = NormKind::kRmsNorm;
  positions = PositionKind::kRotary;
  fused_qkv = false;
  qkv_bias = false;
  linear_bias = false;
  mlp = MlpKind::kSwiGlu;
  tie_embeddings = false;
  names = BlockNames{"input_norm",          "qkv",       "q_proj",  "k_proj",   "v_proj", "o_proj",
                     "post_attention_norm", "gate_proj", "up_proj", "down_proj"};
}

LlamaOptions LlamaOptions::from_config(const ModelConfig& model, uint64_t seed, ModelKeys* keys) {
  ModelKeys unused;
  ModelKeys& k = keys != nullptr ? *keys : unused;
  LlamaOptions o;
  o.read_common(model, seed, k);
  // 0 means heads: the value the model uses is what a checkpoint is compared by.
  o.kv_heads = k.read("model.kv_heads", model.kv_heads == 0 ? model.heads : model.kv_heads);
  o.intermediate =
      k.read("model.intermediate_size", model.intermediate_size) > 0
          ? model.intermediate_size
          : llama_intermediate_size(model.hidden, k.read("model.multiple_of", model.multiple_of));
  o.norm_eps = k.read("model.norm_eps", model.norm_eps);
  o.rope_theta = k.read("model.rope_theta", model.rope_theta);
  o.rope_scaling_factor = k.read("model.rope_scaling_factor", model.rope_scaling_factor);
  if (o.rope_scaling_factor > 0) {  // the scaling's other terms count only when it is on
    o.rope_low_freq_factor = k.read("model.rope_low_freq_factor", model.rope_low_freq_factor);
    o.rope_high_freq_factor = k.read("model.rope_high_freq_factor", model.rope_high_freq_factor);
    o.rope_original_max_positions =
        k.read("model.rope_original_max_positions", model.rope_original_max_positions);
  }
  o.qkv_bias = k.read("model.qkv_bias", model.qkv_bias);
  return o;
}

}  // namespace triax
