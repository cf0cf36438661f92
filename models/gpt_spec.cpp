#include "models/gpt_spec.h"

#include "models/gpt_flops.h"
#include "models/gpt_memory.h"
#include "models/gpt_stages.h"

namespace triax {

torch::Tensor GptChunk::forward(const torch::Tensor& input, const Batch& micro) {
  return gpt_->run_layers(input.defined() ? input : gpt_->embed(micro.inputs));
}

torch::Tensor GptChunk::loss(const torch::Tensor& output, const Batch& micro) {
  return gpt_->loss_from_hidden(output, micro.targets);
}

torch::Tensor GptChunk::metric(const torch::Tensor& output, const Batch& micro) {
  return gpt_->loss_from_hidden(output, micro.targets);
}

torch::Tensor GptChunk::logits(const torch::Tensor& output) {
  return gpt_->logits_from_hidden(output);
}

std::vector<torch::Tensor> GptChunk::sequence_partial_parameters() {
  return gpt_->sequence_partial_parameters();
}

std::vector<std::pair<std::string, torch::Tensor>> GptChunk::rng_state() {
  const auto streams = gpt_->dropout().state();
  return {{"dropout_shared", streams[0]}, {"dropout_tp_local", streams[1]}};
}

void GptChunk::set_rng_state(const std::map<std::string, torch::Tensor>& state) {
  const auto shared = state.find("dropout_shared");
  const auto local = state.find("dropout_tp_local");
  if (shared != state.end() && local != state.end()) {
    gpt_->dropout().set_state({shared->second, local->second});
  }
}

Batch token_batch(const torch::Tensor& tokens) {
  const int64_t seq = tokens.size(1) - 1;
  return Batch{tokens.narrow(1, 0, seq), tokens.narrow(1, 1, seq)};
}

namespace {

std::vector<std::pair<int64_t, int64_t>> stage_layers(const Config& config) {
  const int stages = static_cast<int>(config.parallel.pipeline * config.schedule.chunks_per_rank);
  return split_layers(config.model.layers, stages, config.schedule.layer_boundaries);
}

std::unique_ptr<ModelChunk> build_chunk(const Config& config, int stage,
                                        const std::vector<std::pair<int64_t, int64_t>>& stages,
                                        Communicator& tp) {
  GptOptions whole =
      GptOptions::from_config(config.model, static_cast<uint64_t>(config.train.seed));
  whole.recompute = config.train.recompute;
  whole.recompute_layers = config.train.recompute_layers;
  whole.sequence_parallel = config.parallel.sequence;
  return std::make_unique<GptChunk>(gpt_stage_options(whole, stage, stages), tp);
}

int64_t tokens_per_sample(const ModelConfig& model) {
  return model.seq_len;
}

// Between stages: [micro-batch, sequence, hidden]; with sequence parallelism in training each tp
// rank sends its part of the sequence.
std::vector<int64_t> activation_shape(const Config& config, int64_t micro_batch, int tp,
                                      bool sequence_split) {
  const int64_t seq = config.model.seq_len;
  return {micro_batch, sequence_split ? seq / tp : seq, config.model.hidden};
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
                              stage_layers,
                              build_chunk,
                              tokens_per_sample,
                              gpt_flops_per_token,
                              activation_shape,
                              gpt_stage_memory};
  return spec;
}

}  // namespace triax
