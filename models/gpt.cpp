#include "models/gpt.h"

#include "core/error.h"

namespace triax {

std::string valid_divisors(int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return join(divisors, ", ");
}

void check_gpt_layout(const Config& config) {
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
  options.vocab = k.read("model.vocab", model.vocab);
  options.hidden = k.read("model.hidden", model.hidden);
  options.heads = k.read("model.heads", model.heads);
  options.layers = k.read("model.layers", model.layers);
  options.seq_len = k.read("model.seq_len", model.seq_len);
  options.tie_embeddings = k.read("model.tie_embeddings", model.tie_embeddings);
  options.mlp = k.read("model.activation", model.activation) == Activation::kGeluTanh
                    ? MlpKind::kGeluTanh
                    : MlpKind::kGelu;
  options.dropout = model.dropout;  // a training choice: no weight, no evaluation output
  options.seed = seed;
  return options;
}

}  // namespace triax
