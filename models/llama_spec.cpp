#include "models/llama_spec.h"

#include "core/error.h"
#include "core/strings.h"
#include "models/gpt_spec.h"
#include "models/llama_hf.h"
#include "models/transformer_flops.h"
#include "models/transformer_kernels.h"
#include "models/transformer_memory.h"
#include "models/transformer_stages.h"

namespace triax {

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
                              transformer_stage_layers<transformer_flops_per_token<LlamaOptions>>,
                              build_transformer_chunk<LlamaOptions>,
                              tokens_per_sample,
                              transformer_flops_per_token<LlamaOptions>,
                              transformer_activation_shape,
                              transformer_stage_memory<LlamaOptions>,
                              transformer_model_keys<LlamaOptions>,
                              DataSource::kTokenFiles,
                              profile_terms,
                              &llama_hf(),
                              transformer_kernels<LlamaOptions>};
  return spec;
}

}  // namespace triax
