// defines: triax::LlamaChunk, triax::llama_stage_options, triax::llama_flops_per_token,
//          triax::llama_spec
//
// The Llama family as a model spec (models/model_spec.h): a chunk is a Llama part holding its
// stage's layers; samples are token sequences as the GPT's (token_batch); evaluation measures the
// held-out loss.
#pragma once

#include <utility>
#include <vector>

#include "models/llama.h"
#include "models/model_spec.h"

namespace triax {

class LlamaChunk : public ModelChunk {
 public:
  LlamaChunk(const LlamaOptions& options, Communicator& tp) : llama_(options, tp) {}
  torch::nn::Module& module() override { return *llama_; }
  torch::Tensor forward(const torch::Tensor& input, const Batch& micro) override;
  torch::Tensor loss(const torch::Tensor& output, const Batch& micro) override;
  torch::Tensor metric(const torch::Tensor& output, const Batch& micro) override;
  torch::Tensor logits(const torch::Tensor& output) override;
  std::vector<torch::Tensor> sequence_partial_parameters() override;
  std::vector<std::pair<std::string, torch::Tensor>> rng_state() override;
  void set_rng_state(const std::map<std::string, torch::Tensor>& state) override;
  Llama& llama() { return llama_; }

 private:
  Llama llama_;
};

/// The options of stage `stage` of `whole`, given the layer ranges of split_layers.
LlamaOptions llama_stage_options(const LlamaOptions& whole, int stage,
                                 const std::vector<std::pair<int64_t, int64_t>>& ranges);

/// Training FLOPs per token, the matmuls executed (PaLM's convention, as gpt_flops_per_token):
/// 6 x (per layer 2h^2 for q and o, 2h * kv_heads * head_dim for k and v, 3h * intermediate for
/// gate, up and down; h * vocab for the head) + 12 L h T for the attention scores and sums.
double llama_flops_per_token(const ModelConfig& model);

const ModelSpec& llama_spec();

}  // namespace triax
