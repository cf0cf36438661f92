#include "models/gpt_spec.h"

#include "core/strings.h"
#include "models/gpt_hf.h"
#include "models/transformer_flops.h"
#include "models/transformer_kernels.h"
#include "models/transformer_memory.h"
#include "models/transformer_stages.h"

namespace triax {

Batch token_batch(const torch::Tensor& tokens) {
  const int64_t seq = tokens.size(1) - 1;
  return Batch{tokens.narrow(1, 0, seq), tokens.narrow(1, 1, seq)};
}

Batch random_token_batch(const Config& config, int step) {
  torch::manual_seed(static_cast<uint64_t>(step));
  return token_batch(torch::randint(
      0, config.model.vocab, {config.train.global_batch, config.model.seq_len + 1}, torch::kLong));
}

namespace {

std::string profile_terms(const ModelConfig& m) {
  return str(" h", m.hidden, " a", m.heads);
}

}  // namespace

const ModelSpec& gpt_spec() {
  static const ModelSpec spec{ModelKind::kGpt,
                              "GPT",
                              "tokens",
                              "tok",
                              "6N + attention",
                              "val loss",
                              "val_loss",
                              /*metric_is_fraction=*/false,
                              /*pipelined=*/true,
                              /*generates_text=*/true,
                              check_gpt_layout,
                              transformer_stage_layers<transformer_flops_per_token<GptOptions>>,
                              build_transformer_chunk<GptOptions>,
                              tokens_per_sample,
                              transformer_flops_per_token<GptOptions>,
                              transformer_activation_shape,
                              transformer_stage_memory<GptOptions>,
                              transformer_model_keys<GptOptions>,
                              DataSource::kTokenFiles,
                              profile_terms,
                              &gpt_hf(),
                              transformer_kernels<GptOptions>};
  return spec;
}

}  // namespace triax
