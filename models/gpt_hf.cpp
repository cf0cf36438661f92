#include "models/gpt_hf.h"

#include <cmath>

#include "core/strings.h"

namespace triax {
namespace {

// The sizes config.json names directly (n_positions is seq_len and n_ctx, written apart).
const std::vector<HfSizeKey> kSizes = {{"vocab_size", &ModelConfig::vocab},
                                       {"n_embd", &ModelConfig::hidden},
                                       {"n_head", &ModelConfig::heads},
                                       {"n_layer", &ModelConfig::layers}};

void read_gpt2(const HfConfigKeys& k, const ModelConfig& /*base*/, HfModelConfig& hf) {
  ModelConfig& m = hf.model;
  m.arch = ModelKind::kGpt;
  read_sizes(k, kSizes, m);
  hf.max_positions = k.integer("n_positions");
  m.seq_len = hf.max_positions;  // learned positions: the table's rows are the model's
  if (k.has("n_inner") && k.integer("n_inner") != 4 * m.hidden) {
    k.refuse("n_inner", str("triax's GPT MLP is 4 x n_embd (valid: null or ", 4 * m.hidden, ")"));
  }
  const std::string act = k.text_or("activation_function", "gelu_new");
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    m.activation = Activation::kGeluTanh;
  } else if (act == "gelu") {
    m.activation = Activation::kGelu;
  } else {
    k.refuse("activation_function", "valid: gelu_new (tanh GELU), gelu_pytorch_tanh, gelu");
  }
  if (std::abs(k.number_or("layer_norm_epsilon", 1e-5) - 1e-5) > 1e-12) {
    k.refuse("layer_norm_epsilon", "triax's GPT LayerNorm uses 1e-5 (valid: 1e-05)");
  }
  if (!k.boolean_or("scale_attn_weights", true)) {
    k.refuse("scale_attn_weights", "triax scales attention by 1/sqrt(head_dim) (valid: true)");
  }
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"}) {
    if (k.boolean_or(key, false)) k.refuse(key, "not computed by triax (valid: false)");
  }
  m.tie_embeddings = k.boolean_or("tie_word_embeddings", true);
}

nlohmann::json write_gpt2(const ModelConfig& m) {
  nlohmann::json j = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"n_positions", m.seq_len},
      {"n_ctx", m.seq_len},
      {"n_inner", nullptr},
      {"activation_function", m.activation == Activation::kGeluTanh ? "gelu_new" : "gelu"},
      {"layer_norm_epsilon", 1e-5},
      {"resid_pdrop", m.dropout},
      {"embd_pdrop", m.dropout},
      {"attn_pdrop", m.dropout},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"tie_word_embeddings", m.tie_embeddings}};
  write_sizes(kSizes, m, j);
  return j;
}

std::vector<HfTensor> gpt2_tensors(const ModelConfig& m, const std::string& p) {
  const int64_t h = m.hidden;
  std::vector<HfTensor> t = {{p + "wte.weight", "token_embedding.weight", {m.vocab, h}},
                             {p + "wpe.weight", "position_embedding.weight", {m.seq_len, h}}};
  append_layer_tensors(t, m.layers, p + "h.",
                       {{"ln_1.weight", "ln1.weight", {h}},
                        {"ln_1.bias", "ln1.bias", {h}},
                        {"attn.c_attn.weight", "qkv.weight", {h, 3 * h}, true},
                        {"attn.c_attn.bias", "qkv.bias", {3 * h}},
                        {"attn.c_proj.weight", "proj.weight", {h, h}, true},
                        {"attn.c_proj.bias", "proj.bias", {h}},
                        {"ln_2.weight", "ln2.weight", {h}},
                        {"ln_2.bias", "ln2.bias", {h}},
                        {"mlp.c_fc.weight", "fc.weight", {h, 4 * h}, true},
                        {"mlp.c_fc.bias", "fc.bias", {4 * h}},
                        {"mlp.c_proj.weight", "fc_out.weight", {4 * h, h}, true},
                        {"mlp.c_proj.bias", "fc_out.bias", {h}}});
  t.push_back({p + "ln_f.weight", "final_norm.weight", {h}});
  t.push_back({p + "ln_f.bias", "final_norm.bias", {h}});
  if (!m.tie_embeddings) t.push_back({"lm_head.weight", "head.weight", {m.vocab, h}});
  return t;
}

}  // namespace

const HfFamily& gpt_hf() {
  static const HfFamily family{{"GPT2LMHeadModel"}, read_gpt2,
                               write_gpt2,          gpt2_tensors,
                               "transformer.",      {".attn.bias", ".attn.masked_bias"}};
  return family;
}

}  // namespace triax
