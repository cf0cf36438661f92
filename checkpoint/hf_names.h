// defines: triax::HfTensor, triax::hf_tensors, triax::hf_ignored
//
// The one table of how a Hugging Face checkpoint's tensors are triax's full-model parameters,
// read by both import and export (so they cannot disagree):
//   GPT2LMHeadModel (names under "transformer.", as save_pretrained writes them; the original
//   gpt2 upload has none, which import also accepts):
//     wte -> token_embedding, wpe -> position_embedding, h.{i}.ln_1/ln_2 -> layer{i}.ln1/ln2,
//     h.{i}.attn.c_attn (fused q|k|v columns) -> layer{i}.qkv, attn.c_proj -> proj,
//     mlp.c_fc -> fc, mlp.c_proj -> fc_out, ln_f -> final_norm, lm_head -> head (untied only).
//     Conv1D stores [in, out]: every c_* weight is the transpose of triax's Linear [out, in].
//   LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM ("model." prefix):
//     embed_tokens -> token_embedding, layers.{i}.input_layernorm -> layer{i}.input_norm,
//     self_attn.{q,k,v,o}_proj -> {q,k,v,o}_proj (Qwen2: q/k/v biases),
//     post_attention_layernorm -> post_attention_norm, mlp.{gate,up,down}_proj -> the same,
//     norm -> final_norm, lm_head -> head (untied only).
//     Both use rotate_half RoPE, so q and k need no permutation (Meta's original .pth would).
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace triax {

struct HfTensor {
  std::string hf;                 ///< the Hugging Face name, prefix included
  std::string triax;              ///< triax's full-model parameter name
  std::vector<int64_t> hf_shape;  ///< its shape in the Hugging Face file
  bool transposed = false;        ///< GPT-2's Conv1D: triax's tensor is the transpose
};

/// Every tensor of `model` in Hugging Face form, in the order export writes them. `prefix`:
/// "transformer." or "" for GPT-2 ("model." is fixed for the Llama family).
std::vector<HfTensor> hf_tensors(const ModelConfig& model, const std::string& prefix);

/// Whether a Hugging Face tensor is a buffer triax recomputes and import skips: GPT-2's causal
/// masks (attn.bias, attn.masked_bias), a stored rotary inv_freq.
bool hf_ignored(const std::string& hf_name);

}  // namespace triax
