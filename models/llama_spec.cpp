#include "models/llama_spec.h"

#include "core/error.h"
#include "models/gpt_spec.h"
#include "models/gpt_stages.h"
#include "models/llama_memory.h"

namespace triax {

torch::Tensor LlamaChunk::forward(const torch::Tensor& input, const Batch& micro) {
  return llama_->run_layers(input.defined() ? input : llama_->embed(micro.inputs));
}

torch::Tensor LlamaChunk::loss(const torch::Tensor& output, const Batch& micro) {
  return llama_->loss_from_hidden(output, micro.targets);
}

torch::Tensor LlamaChunk::metric(const torch::Tensor& output, const Batch& micro) {
  return llama_->loss_from_hidden(output, micro.targets);
}

torch::Tensor LlamaChunk::logits(const torch::Tensor& output) {
  return llama_->logits_from_hidden(output);
}

std::vector<torch::Tensor> LlamaChunk::sequence_partial_parameters() {
  return llama_->sequence_partial_parameters();
}

std::vector<std::pair<std::string, torch::Tensor>> LlamaChunk::rng_state() {
  const auto streams = llama_->dropout().state();
  return {{"dropout_shared", streams[0]}, {"dropout_tp_local", streams[1]}};
}

void LlamaChunk::set_rng_state(const std::map<std::string, torch::Tensor>& state) {
  const auto shared = state.find("dropout_shared");
  const auto local = state.find("dropout_tp_local");
  if (shared != state.end() && local != state.end()) {
    llama_->dropout().set_state({shared->second, local->second});
  }
}

LlamaOptions llama_stage_options(const LlamaOptions& whole, int stage,
                                 const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  TRIAX_CHECK(stage >= 0 && stage < static_cast<int>(ranges.size()), "stage ", stage, " of ",
              ranges.size());
  LlamaOptions options = whole;
  options.first_layer = ranges[static_cast<size_t>(stage)].first;
  options.last_layer = ranges[static_cast<size_t>(stage)].second;
  options.has_embedding = stage == 0;
  options.has_head = stage == static_cast<int>(ranges.size()) - 1;
  return options;
}

double llama_flops_per_token(const ModelConfig& model) {
  const LlamaOptions o = LlamaOptions::from_config(model, 0);
  const double h = static_cast<double>(o.hidden);
  const double kv = static_cast<double>(o.kv_heads * (o.hidden / o.heads));
  const double layer = 2 * h * h + 2 * h * kv + 3 * h * static_cast<double>(o.intermediate);
  const double matmuls = static_cast<double>(o.layers) * layer + h * static_cast<double>(o.vocab);
  return 6 * matmuls + 12.0 * static_cast<double>(o.layers) * h * static_cast<double>(o.seq_len);
}

namespace {

std::vector<std::pair<int64_t, int64_t>> stage_layers(const Config& config) {
  const int stages = static_cast<int>(config.parallel.pipeline * config.schedule.chunks_per_rank);
  return split_layers(config.model.layers, stages, config.schedule.layer_boundaries);
}

std::unique_ptr<ModelChunk> build_chunk(const Config& config, int stage,
                                        const std::vector<std::pair<int64_t, int64_t>>& stages,
                                        Communicator& tp) {
  LlamaOptions whole =
      LlamaOptions::from_config(config.model, static_cast<uint64_t>(config.train.seed));
  whole.recompute = config.train.recompute;
  whole.recompute_layers = config.train.recompute_layers;
  whole.sequence_parallel = config.parallel.sequence;
  return std::make_unique<LlamaChunk>(llama_stage_options(whole, stage, stages), tp);
}

int64_t tokens_per_sample(const ModelConfig& model) {
  return model.seq_len;
}

std::vector<int64_t> activation_shape(const Config& config, int64_t micro_batch, int tp,
                                      bool sequence_split) {
  const int64_t seq = config.model.seq_len;
  return {micro_batch, sequence_split ? seq / tp : seq, config.model.hidden};
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
                              stage_layers,
                              build_chunk,
                              tokens_per_sample,
                              llama_flops_per_token,
                              activation_shape,
                              llama_stage_memory};
  return spec;
}

}  // namespace triax
