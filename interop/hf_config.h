// defines: triax::hf_family_of, triax::read_hf_config, triax::write_hf_config
//
// A Hugging Face `config.json` <-> triax's model section. The file is read here; which
// architectures exist and what their keys mean is each family's (ModelSpec::hf,
// models/hf_family.h): GPT2LMHeadModel is the GPT, LlamaForCausalLM, MistralForCausalLM and
// Qwen2ForCausalLM the Llama. Anything triax would compute differently is refused with the key, its
// value and what is valid: a checkpoint that loads but computes something else is the failure
// this guards against (docs/interop.md).
#pragma once

#include <string>

#include "core/config.h"
#include "models/hf_family.h"

namespace triax {

/// The Hugging Face form of `model`'s family; throws ConfigError naming model.arch and the
/// families that have one when it has none.
const HfFamily& hf_family_of(const ModelConfig& model);

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
