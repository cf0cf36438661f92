// defines: triax::llama_hf
//
// The Llama's Hugging Face forms: LlamaForCausalLM and MistralForCausalLM (silu, no o/mlp bias,
// Llama 3 rope scaling), Qwen2ForCausalLM (the same with q/k/v biases). Its tensors ("model."
// prefix):
//   embed_tokens -> token_embedding, layers.{i}.input_layernorm -> layer{i}.input_norm,
//   self_attn.{q,k,v,o}_proj -> {q,k,v,o}_proj (Qwen2: q/k/v biases),
//   post_attention_layernorm -> post_attention_norm, mlp.{gate,up,down}_proj -> the same,
//   norm -> final_norm, lm_head -> head (untied only).
// Both sides use rotate_half RoPE, so q and k need no permutation (Meta's original .pth would).
// Refused: another activation, a head_dim that is not hidden / heads, yarn or linear rope
// scaling, a sliding window shorter than the sequence, biases on o_proj or the MLP.
#pragma once

#include "models/hf_family.h"

namespace triax {

const HfFamily& llama_hf();

}  // namespace triax
