#include "checkpoint/hf_names.h"

#include "core/strings.h"

namespace triax {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<HfTensor> gpt2_tensors(const ModelConfig& m, const std::string& p) {
  const int64_t h = m.hidden;
  std::vector<HfTensor> t = {{p + "wte.weight", "token_embedding.weight", {m.vocab, h}},
                             {p + "wpe.weight", "position_embedding.weight", {m.seq_len, h}}};
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string hf = str(p, "h.", i, "."), tx = str("layer", i, ".");
    const auto add = [&](const std::string& a, const std::string& b, std::vector<int64_t> shape,
                         bool transposed = false) {
      t.push_back({hf + a, tx + b, std::move(shape), transposed});
    };
    add("ln_1.weight", "ln1.weight", {h});
    add("ln_1.bias", "ln1.bias", {h});
    add("attn.c_attn.weight", "qkv.weight", {h, 3 * h}, true);
    add("attn.c_attn.bias", "qkv.bias", {3 * h});
    add("attn.c_proj.weight", "proj.weight", {h, h}, true);
    add("attn.c_proj.bias", "proj.bias", {h});
    add("ln_2.weight", "ln2.weight", {h});
    add("ln_2.bias", "ln2.bias", {h});
    add("mlp.c_fc.weight", "fc.weight", {h, 4 * h}, true);
    add("mlp.c_fc.bias", "fc.bias", {4 * h});
    add("mlp.c_proj.weight", "fc_out.weight", {4 * h, h}, true);
    add("mlp.c_proj.bias", "fc_out.bias", {h});
  }
  t.push_back({p + "ln_f.weight", "final_norm.weight", {h}});
  t.push_back({p + "ln_f.bias", "final_norm.bias", {h}});
  if (!m.tie_embeddings) t.push_back({"lm_head.weight", "head.weight", {m.vocab, h}});
  return t;
}

std::vector<HfTensor> llama_tensors(const ModelConfig& m) {
  const int64_t h = m.hidden, d = m.hidden / m.heads;
  const int64_t kv = (m.kv_heads > 0 ? m.kv_heads : m.heads) * d;
  const int64_t inter = m.intermediate_size;
  std::vector<HfTensor> t = {{"model.embed_tokens.weight", "token_embedding.weight", {m.vocab, h}}};
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string hf = str("model.layers.", i, "."), tx = str("layer", i, ".");
    const auto add = [&](const std::string& a, const std::string& b, std::vector<int64_t> shape) {
      t.push_back({hf + a, tx + b, std::move(shape)});
    };
    add("input_layernorm.weight", "input_norm.weight", {h});
    add("self_attn.q_proj.weight", "q_proj.weight", {h, h});
    if (m.qkv_bias) add("self_attn.q_proj.bias", "q_proj.bias", {h});
    add("self_attn.k_proj.weight", "k_proj.weight", {kv, h});
    if (m.qkv_bias) add("self_attn.k_proj.bias", "k_proj.bias", {kv});
    add("self_attn.v_proj.weight", "v_proj.weight", {kv, h});
    if (m.qkv_bias) add("self_attn.v_proj.bias", "v_proj.bias", {kv});
    add("self_attn.o_proj.weight", "o_proj.weight", {h, h});
    add("post_attention_layernorm.weight", "post_attention_norm.weight", {h});
    add("mlp.gate_proj.weight", "gate_proj.weight", {inter, h});
    add("mlp.up_proj.weight", "up_proj.weight", {inter, h});
    add("mlp.down_proj.weight", "down_proj.weight", {h, inter});
  }
  t.push_back({"model.norm.weight", "final_norm.weight", {h}});
  if (!m.tie_embeddings) t.push_back({"lm_head.weight", "head.weight", {m.vocab, h}});
  return t;
}

}  // namespace

std::vector<HfTensor> hf_tensors(const ModelConfig& model, const std::string& prefix) {
  return model.arch == ModelKind::kGpt ? gpt2_tensors(model, prefix) : llama_tensors(model);
}

bool hf_ignored(const std::string& name) {
  return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
         ends_with(name, ".rotary_emb.inv_freq");
}

}  // namespace triax
