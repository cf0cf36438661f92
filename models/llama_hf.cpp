#include "models/llama_hf.h"

#include <algorithm>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

using nlohmann::json;

void read_rope_scaling(const HfConfigKeys& k, const std::string& key, ModelConfig& m) {
  const json& s = k.at(key);
  if (!s.is_object()) k.refuse(key, "must be an object or null");
  // A field of the wrong JSON type: refused naming the key, not as nlohmann's bare type_error.
  try {
    const std::string type = s.value("rope_type", s.value("type", std::string("default")));
    if (s.contains("rope_theta")) m.rope_theta = s["rope_theta"].get<double>();  // rope_parameters
    if (type == "default") return;
    if (type != "llama3") {
      k.refuse(key,
               str("rope type '", type, "' is not computed by triax (valid: default, llama3)"));
    }
    for (const char* field :
         {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
      if (!s.contains(field) || !s[field].is_number()) {
        k.refuse(key, str("llama3 scaling needs ", field));
      }
    }
    m.rope_scaling_factor = s["factor"].get<double>();
    m.rope_low_freq_factor = s["low_freq_factor"].get<double>();
    m.rope_high_freq_factor = s["high_freq_factor"].get<double>();
    m.rope_original_max_positions = s["original_max_position_embeddings"].get<int64_t>();
  } catch (const json::exception& e) {
    k.refuse(key, e.what());
  }
}

// The sizes config.json names directly (num_key_value_heads may be absent: written apart).
const std::vector<HfSizeKey> kSizes = {{"vocab_size", &ModelConfig::vocab},
                                       {"hidden_size", &ModelConfig::hidden},
                                       {"intermediate_size", &ModelConfig::intermediate_size},
                                       {"num_hidden_layers", &ModelConfig::layers},
                                       {"num_attention_heads", &ModelConfig::heads}};

void read_llama(const HfConfigKeys& k, const ModelConfig& base, HfModelConfig& hf) {
  ModelConfig& m = hf.model;
  m.arch = ModelKind::kLlama;
  read_sizes(k, kSizes, m);
  m.kv_heads = k.integer_or("num_key_value_heads", m.heads);
  m.norm_eps = k.number_or("rms_norm_eps", 1e-6);
  m.rope_theta = k.number_or("rope_theta", 10000.0);
  m.tie_embeddings = k.boolean_or("tie_word_embeddings", false);
  m.qkv_bias = hf.architecture == "Qwen2ForCausalLM";
  hf.max_positions = k.integer_or("max_position_embeddings", base.seq_len);
  m.seq_len = base.seq_len;
  if (m.seq_len > hf.max_positions) {
    throw ConfigError(str("model.seq_len: ", m.seq_len, " exceeds the checkpoint's ",
                          "max_position_embeddings ", hf.max_positions, " in ", k.path(),
                          " (valid: 1..", hf.max_positions, ")"));
  }
  if (k.text_or("hidden_act", "silu") != "silu") {
    k.refuse("hidden_act", "triax's Llama computes SwiGLU with silu (valid: silu)");
  }
  if (k.has("head_dim") && m.heads > 0 && k.integer("head_dim") != m.hidden / m.heads) {
    k.refuse("head_dim", str("triax's head size is hidden_size / num_attention_heads (valid: ",
                             m.hidden / std::max<int64_t>(m.heads, 1), ")"));
  }
  if (m.qkv_bias == false && k.boolean_or("attention_bias", false)) {
    k.refuse("attention_bias", "an o_proj bias is not computed by triax (valid: false)");
  }
  if (k.boolean_or("mlp_bias", false)) k.refuse("mlp_bias", "valid: false");
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (k.has(key)) read_rope_scaling(k, key, m);
  }
  const bool window = hf.architecture == "Qwen2ForCausalLM"
                          ? k.boolean_or("use_sliding_window", false)
                          : k.has("sliding_window");
  if (window && k.has("sliding_window") && k.integer("sliding_window") < m.seq_len) {
    k.refuse("sliding_window",
             str("shorter than model.seq_len ", m.seq_len,
                 ": triax attends to the whole sequence (valid: null or >= ", m.seq_len, ")"));
  }
}

json write_llama(const ModelConfig& m) {
  const int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  json j = {{"architectures", {m.qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
            {"model_type", m.qkv_bias ? "qwen2" : "llama"},
            {"num_key_value_heads", kv},
            {"head_dim", m.hidden / m.heads},
            {"hidden_act", "silu"},
            {"max_position_embeddings", m.seq_len},
            {"rms_norm_eps", m.norm_eps},
            {"rope_theta", m.rope_theta},
            {"rope_scaling", nullptr},
            {"tie_word_embeddings", m.tie_embeddings},
            {"attention_dropout", m.dropout},
            {"initializer_range", 0.02}};
  write_sizes(kSizes, m, j);
  if (m.qkv_bias) {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
  } else {
    j["attention_bias"] = false;
    j["mlp_bias"] = false;
  }
  if (m.rope_scaling_factor > 0) {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", m.rope_scaling_factor},
                         {"low_freq_factor", m.rope_low_freq_factor},
                         {"high_freq_factor", m.rope_high_freq_factor},
                         {"original_max_position_embeddings", m.rope_original_max_positions}};
  }
  return j;
}

std::vector<HfTensor> llama_tensors(const ModelConfig& m, const std::string& /*prefix*/) {
  const int64_t h = m.hidden, d = m.hidden / m.heads;
  const int64_t kv = (m.kv_heads > 0 ? m.kv_heads : m.heads) * d;
  const int64_t inter = m.intermediate_size;
  std::vector<HfTensor> layer = {{"input_layernorm.weight", "input_norm.weight", {h}}};
  for (const auto& [name, rows] :
       {std::pair<std::string, int64_t>{"q_proj", h}, {"k_proj", kv}, {"v_proj", kv}}) {
    layer.push_back({"self_attn." + name + ".weight", name + ".weight", {rows, h}});
    if (m.qkv_bias) layer.push_back({"self_attn." + name + ".bias", name + ".bias", {rows}});
  }
  layer.insert(layer.end(), {{"self_attn.o_proj.weight", "o_proj.weight", {h, h}},
                             {"post_attention_layernorm.weight", "post_attention_norm.weight", {h}},
                             {"mlp.gate_proj.weight", "gate_proj.weight", {inter, h}},
                             {"mlp.up_proj.weight", "up_proj.weight", {inter, h}},
                             {"mlp.down_proj.weight", "down_proj.weight", {h, inter}}});
  std::vector<HfTensor> t = {{"model.embed_tokens.weight", "token_embedding.weight", {m.vocab, h}}};
  append_layer_tensors(t, m.layers, "model.layers.", layer);
  t.push_back({"model.norm.weight", "final_norm.weight", {h}});
  if (!m.tie_embeddings) t.push_back({"lm_head.weight", "head.weight", {m.vocab, h}});
  return t;
}

}  // namespace

const HfFamily& llama_hf() {
  static const HfFamily family{{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"},
                               read_llama,
                               write_llama,
                               llama_tensors,
                               "",
                               {".rotary_emb.inv_freq"}};
  return family;
}

}  // namespace triax
