// defines: triax::HfModelConfig, triax::read_hf_config, triax::write_hf_config
//
// A Hugging Face `config.json` <-> triax's model section, for the architectures triax computes
// exactly (docs/interop.md):
//   GPT2LMHeadModel                      -> arch gpt   (gelu_new = gelu_tanh, eps 1e-5, n_inner 4h)
//   LlamaForCausalLM, MistralForCausalLM -> arch llama (silu, no o/mlp bias, Llama 3 rope scaling)
//   Qwen2ForCausalLM                     -> arch llama with q/k/v biases
// Anything triax would compute differently (another activation, a head_dim that is not
// hidden / heads, yarn or linear rope scaling, a sliding window shorter than the sequence, biases
// on o_proj or the MLP) is refused with the key, its value and what is valid: a checkpoint that
// loads but computes something else is the failure this guards against.
#pragma once

#include <string>

#include "core/config.h"

namespace triax {

struct HfModelConfig {
  std::string architecture;   ///< e.g. "LlamaForCausalLM"
  ModelConfig model;          ///< triax's model section (seq_len: see read_hf_config)
  std::string torch_dtype;    ///< "float32", "bfloat16", ... ("" when absent)
  int64_t max_positions = 0;  ///< n_positions / max_position_embeddings
};

/// Reads DIR/config.json. `base` gives what the file does not decide (dropout, seq_len for the
/// Llama family, capped by max_position_embeddings); GPT-2's learned positions fix seq_len to
/// n_positions. Throws ConfigError naming the file, the key, the value and what is valid.
HfModelConfig read_hf_config(const std::string& dir, const ModelConfig& base);

/// Writes DIR/config.json for `model` (the architecture follows from it: gpt -> GPT2LMHeadModel,
/// llama -> LlamaForCausalLM, or Qwen2ForCausalLM with q/k/v biases); `torch_dtype` is the
/// dtype of the weights written beside it.
void write_hf_config(const ModelConfig& model, const std::string& torch_dtype,
                     const std::string& dir);

}  // namespace triax
