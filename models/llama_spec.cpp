#include "models/llama_spec.h"

#include "core/error.h"
#include "core/strings.h"
#include "models/gpt_spec.h"
#include "models/llama_hf.h"
#include "models/llama_memory.h"
#include "models/transformer_stages.h"

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

std::string profile_terms(const ModelConfig& m) {
  return str(" h", m.hidden, " a", m.heads, " kv", m.kv_heads == 0 ? m.heads : m.kv_heads, " i",
             m.intermediate_size);
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
                              build_transformer_chunk<LlamaOptions>,
                              tokens_per_sample,
                              llama_flops_per_token,
                              transformer_activation_shape,
                              llama_stage_memory,
                              transformer_model_keys<LlamaOptions>,
                              DataSource::kTokenFiles,
                              profile_terms,
                              &llama_hf()};
  return spec;
}

}  // namespace triax
