// defines: triax::TransformerChunk, triax::stage_options, triax::transformer_stage_layers,
//          triax::tokens_per_sample, triax::transformer_activation_shape,
//          triax::build_transformer_chunk, triax::transformer_model_keys
//
// What the GPT and the Llama share as model specs (models/model_spec.h): a chunk is one part of
// the transformer (models/transformer.h) holding a stage's layers — the embedding on the first
// stage, the final norm, head and loss on the last — driven the same way whatever the family. A
// family's spec names its preset (GptOptions, LlamaOptions: the options read from the config)
// and its layout rules; everything else here is written once.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "models/model_spec.h"
#include "models/stage_balance.h"
#include "models/transformer_stages.h"

namespace triax {

/// The options of stage `stage` of `whole`, given each stage's [first, last) layers.
template <typename Options>
Options stage_options(const Options& whole, int stage,
                      const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  TRIAX_CHECK(stage >= 0 && stage < static_cast<int>(ranges.size()), "stage ", stage, " of ",
              ranges.size());
  Options options = whole;
  options.first_layer = ranges[static_cast<size_t>(stage)].first;
  options.last_layer = ranges[static_cast<size_t>(stage)].second;
  options.has_embedding = stage == 0;
  options.has_head = stage == static_cast<int>(ranges.size()) - 1;
  return options;
}

/// The [first, last) layers of each of the p * v stages: schedule.layer_boundaries, or balanced
/// by estimated cost from the family's FLOP count `Flops` (models/stage_balance.h). (AutoPipe's
/// frozen-aware split is written into layer_boundaries: train/freeze.h.)
template <double (*Flops)(const ModelConfig&)>
std::vector<std::pair<int64_t, int64_t>> transformer_stage_layers(const Config& config) {
  const int stages = static_cast<int>(config.parallel.pipeline * config.schedule.chunks_per_rank);
  const auto by_count = split_layers(config.model.layers, stages, config.schedule.layer_boundaries);
  if (!config.schedule.layer_boundaries.empty()) return by_count;
  return balance_layers(config.model.layers, stages, stage_costs(config.model, Flops), by_count);
}

/// A language model's sample is seq_len tokens (of seq_len + 1: inputs and shifted targets).
inline int64_t tokens_per_sample(const ModelConfig& model) {
  return model.seq_len;
}

/// Between stages: [micro-batch, sequence, hidden]; with sequence parallelism in training each
/// tp rank sends its part of the sequence.
inline std::vector<int64_t> transformer_activation_shape(const Config& config, int64_t micro_batch,
                                                         int tp, bool sequence_split) {
  // Under context parallelism a rank holds seq_len / context positions of each sequence.
  const int64_t seq = config.model.seq_len / std::max<int64_t>(1, config.parallel.context);
  return {micro_batch, sequence_split ? seq / tp : seq, config.model.hidden};
}

class TransformerChunk : public ModelChunk {
 public:
  TransformerChunk(const TransformerOptions& options, Communicator& tp) : model_(options, tp) {}
  torch::nn::Module& module() override { return *model_; }
  torch::Tensor forward(const torch::Tensor& input, const Batch& micro) override {
    if (input.defined()) return model_->run_layers(input);
    const size_t cached =
        cache_ != nullptr && micro.samples.defined()
            ? std::min(static_cast<size_t>(cache_->layers()), model_->block_count())
            : 0;
    if (cached == 0) return model_->run_layers(model_->embed(micro.inputs));
    return model_->run_layers(cached_prefix(micro, cached), cached, model_->block_count());
  }
  torch::Tensor loss(const torch::Tensor& output, const Batch& micro) override {
    return model_->loss_from_hidden(output, micro.targets);
  }
  /// Evaluation measures the held-out loss.
  torch::Tensor metric(const torch::Tensor& output, const Batch& micro) override {
    return model_->loss_from_hidden(output, micro.targets);
  }
  torch::Tensor logits(const torch::Tensor& output) override {
    return model_->logits_from_hidden(output);
  }
  std::vector<torch::Tensor> sequence_partial_parameters() override {
    return model_->sequence_partial_parameters();
  }
  torch::Tensor tied_head_alias() override { return model_->tied_head_alias(); }
  int parameter_unit(const std::string& name) const override {
    return model_->parameter_unit(name);
  }
  void set_parameter_gate(ParameterGate* gate) override { model_->set_parameter_gate(gate); }
  void set_context_parallel(Communicator* group, ContextMode mode) override {
    model_->set_context_parallel(group, mode);
  }
  std::vector<std::pair<std::string, torch::Tensor>> rng_state() override {
    const auto streams = model_->dropout().state();
    return {{"dropout_shared", streams[0]}, {"dropout_tp_local", streams[1]}};
  }
  void set_rng_state(const std::map<std::string, torch::Tensor>& state) override {
    const auto shared = state.find("dropout_shared");
    const auto local = state.find("dropout_tp_local");
    if (shared != state.end() && local != state.end()) {
      model_->dropout().set_state({shared->second, local->second});
    }
  }
  bool set_prefix_cache(PrefixCache* cache) override {
    cache_ = cache;
    return true;
  }

 private:
  /// The output of the first `cached` blocks for `micro`: the cache's rows, the blocks run only
  /// over the samples it missed (and those rows kept).
  torch::Tensor cached_prefix(const Batch& micro, size_t cached) {
    torch::Tensor hidden;
    const torch::Tensor hit = cache_->fetch(micro.samples, micro.inputs, &hidden);
    const int64_t hits = hit.sum().item<int64_t>();
    if (hits == micro.size()) return hidden.to(micro.inputs.device());
    const torch::Tensor miss = hit.logical_not().nonzero().flatten();
    const torch::Tensor inputs = micro.inputs.index_select(0, miss.to(micro.inputs.device()));
    const torch::Tensor computed = model_->run_layers(model_->embed(inputs), 0, cached);
    cache_->store(micro.samples.index_select(0, miss), inputs, computed);
    if (hits == 0) return computed;
    return hidden.to(computed.device()).index_copy(0, miss.to(computed.device()), computed);
  }

  Transformer model_;
  PrefixCache* cache_ = nullptr;
};

/// Stage `stage`'s chunk of the family whose preset `Preset` (GptOptions, LlamaOptions) reads
/// the model from the config: the same weights whatever the layout (seeded from train.seed).
template <typename Preset>
std::unique_ptr<ModelChunk> build_transformer_chunk(
    const Config& config, int stage, const std::vector<std::pair<int64_t, int64_t>>& stages,
    Communicator& tp) {
  Preset whole = Preset::from_config(config.model, static_cast<uint64_t>(config.train.seed));
  whole.recompute = config.train.recompute;
  whole.recompute_layers = config.train.recompute_layers;
  whole.sequence_parallel = config.parallel.sequence;
  whole.separate_tied_head = config.train.numerics == Numerics::kLayoutInvariant;
  return std::make_unique<TransformerChunk>(stage_options(whole, stage, stages), tp);
}

/// The model.* keys `Preset` reads (ModelSpec::model_keys).
template <typename Preset>
ModelKeys transformer_model_keys(const ModelConfig& model) {
  ModelKeys keys;
  Preset::from_config(model, 0, &keys);
  return keys;
}

}  // namespace triax
