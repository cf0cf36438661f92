#include "models/llama_spec.h"

#include "core/error.h"
#include "models/gpt_spec.h"
#include "models/gpt_stages.h"
#include "models/llama_memory.h"

namespace triax {

double llama_flops_per_token(const ModelConfig& model) {
  const LlamaOptions o = LlamaOptions::from_config(model, 0);
  const double h = static_cast<double>(o.hidden);
  const double kv = static_cast<double>(o.kv_heads * (o.hidden / o.heads));
  const double layer = 2 * h * h + 2 * h * kv + 3 * h * static_cast<double>(o.intermediate);
  const double matmuls = static_cast<double>(o.layers) * layer + h * static_cast<double>(o.vocab);
  return 6 * matmuls + 12.0 * static_cast<double>(o.layers) * h * static_cast<double>(o.seq_len);
}

namespace {

std::unique_ptr<ModelChunk> build_chunk(const Config& config, int stage,
                                        const std::vector<std::pair<int64_t, int64_t>>& stages,
                                        Communicator& tp) {
  LlamaOptions whole =
      LlamaOptions::from_config(config.model, static_cast<uint64_t>(config.train.seed));
  whole.recompute = config.train.recompute;
  whole.recompute_layers = config.train.recompute_layers;
  whole.sequence_parallel = config.parallel.sequence;
  return std::make_unique<LlamaChunk>(stage_options(whole, stage, stages), tp);
}

ModelKeys keys(const ModelConfig& model) {
  ModelKeys k;
  LlamaOptions::from_config(model, 0, &k);
  return k;
}

}  // namespace

const ModelSpec& llama_spec() {
  static const ModelSpec spec{ModelKind::kLlama,
                              "Llama",
                              "tokens",
                              "tok",
                              "6N + attention",
                              "val loss",
                              "val_loss",
                              /*metric_is_fraction=*/false,
                              /*pipelined=*/true,
                              /*generates_text=*/true,
                              check_llama_layout,
                              transformer_stage_layers<llama_flops_per_token>,
                              build_chunk,
                              tokens_per_sample,
                              llama_flops_per_token,
                              transformer_activation_shape,
                              llama_stage_memory,
                              keys};
  return spec;
}

}  // namespace triax
