// defines: triax::gpt_hf
//
// The GPT's Hugging Face form, GPT2LMHeadModel (gelu_new = gelu_tanh, LayerNorm eps 1e-5, n_inner
// 4h). Its tensors, under "transformer." as save_pretrained writes them (the original gpt2
// upload has no prefix, which import also accepts):
//   wte -> token_embedding, wpe -> position_embedding, h.{i}.ln_1/ln_2 -> layer{i}.ln1/ln2,
//   h.{i}.attn.c_attn (fused q|k|v columns) -> layer{i}.qkv, attn.c_proj -> proj,
//   mlp.c_fc -> fc, mlp.c_proj -> fc_out, ln_f -> final_norm, lm_head -> head (untied only).
//   Conv1D stores [in, out]: every c_* weight is the transpose of triax's Linear [out, in].
// attn.bias and attn.masked_bias (the causal masks) are buffers triax recomputes.
#pragma once

#include "models/hf_family.h"

namespace triax {

const HfFamily& gpt_hf();

}  // namespace triax
