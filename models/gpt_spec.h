// defines: triax::GptChunk, triax::token_batch, triax::gpt_spec
//
// The GPT as a model spec (models/model_spec.h): a chunk is a Gpt part holding its stage's layers
// (models/gpt_stages.h); samples are token sequences of seq_len + 1, whose first seq_len tokens
// are the inputs and whose last seq_len the targets; evaluation measures the held-out loss.
#pragma once

#include "models/gpt.h"
#include "models/model_spec.h"

namespace triax {

class GptChunk : public ModelChunk {
 public:
  GptChunk(const GptOptions& options, Communicator& tp) : gpt_(options, tp) {}
  torch::nn::Module& module() override { return *gpt_; }
  torch::Tensor forward(const torch::Tensor& input, const Batch& micro) override;
  torch::Tensor loss(const torch::Tensor& output, const Batch& micro) override;
  torch::Tensor metric(const torch::Tensor& output, const Batch& micro) override;
  torch::Tensor logits(const torch::Tensor& output) override;
  std::vector<torch::Tensor> sequence_partial_parameters() override;
  std::vector<std::pair<std::string, torch::Tensor>> rng_state() override;
  void set_rng_state(const std::map<std::string, torch::Tensor>& state) override;
  Gpt& gpt() { return gpt_; }

 private:
  Gpt gpt_;
};

/// Token sequences [n, seq_len + 1] as a batch: inputs tokens[:, :-1], targets tokens[:, 1:].
Batch token_batch(const torch::Tensor& tokens);

const ModelSpec& gpt_spec();

}  // namespace triax
