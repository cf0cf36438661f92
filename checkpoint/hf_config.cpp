#include "checkpoint/hf_config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

using nlohmann::json;

// The keys of one config.json, each read with its file and key in every message.
class Keys {
 public:
  Keys(json j, std::string path) : j_(std::move(j)), path_(std::move(path)) {}

  bool has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  const json& at(const std::string& key) const { return j_.at(key); }
  int64_t integer(const std::string& key) const {
    if (!has(key) || !j_[key].is_number_integer()) refuse(key, "must be an integer");
    return j_[key].get<int64_t>();
  }
  int64_t integer_or(const std::string& key, int64_t fallback) const {
    return has(key) ? integer(key) : fallback;
  }
  double number_or(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number()) refuse(key, "must be a number");
    return j_[key].get<double>();
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) refuse(key, "must be true or false");
    return j_[key].get<bool>();
  }
  std::string text_or(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) refuse(key, "must be a string");
    return j_[key].get<std::string>();
  }
  const std::string& path() const { return path_; }
  [[noreturn]] void refuse(const std::string& key, const std::string& rule) const {
    throw ConfigError(str(path_, ": ", key, ": ",
                          j_.contains(key) ? j_[key].dump() : std::string("(absent)"), ": ", rule));
  }

 private:
  json j_;
  std::string path_;
};

void read_gpt2(const Keys& k, HfModelConfig& hf) {
  ModelConfig& m = hf.model;
  m.arch = ModelKind::kGpt;
  m.vocab = k.integer("vocab_size");
  m.hidden = k.integer("n_embd");
  m.heads = k.integer("n_head");
  m.layers = k.integer("n_layer");
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

void read_rope_scaling(const Keys& k, const std::string& key, ModelConfig& m) {
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

void read_llama(const Keys& k, HfModelConfig& hf, const ModelConfig& base) {
  ModelConfig& m = hf.model;
  m.arch = ModelKind::kLlama;
  m.vocab = k.integer("vocab_size");
  m.hidden = k.integer("hidden_size");
  m.intermediate_size = k.integer("intermediate_size");
  m.layers = k.integer("num_hidden_layers");
  m.heads = k.integer("num_attention_heads");
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

}  // namespace

HfModelConfig read_hf_config(const std::string& dir, const ModelConfig& base) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  std::ifstream in(path);
  if (!in) {
    throw ConfigError(str(dir, ": no config.json (valid: a Hugging Face model folder, with ",
                          "config.json and model.safetensors or model.safetensors.index.json)"));
  }
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw ConfigError(str(path, ": not JSON: ", e.what()));
  }
  const Keys k(j, path);
  HfModelConfig hf;
  // A value of the wrong JSON type that a check below reads directly (nlohmann's type_error,
  // which names neither the file nor the key): refused naming the file.
  try {
    hf.model = base;
    if (!k.has("architectures") || !j["architectures"].is_array() || j["architectures"].empty()) {
      k.refuse("architectures",
               "needs one of GPT2LMHeadModel, LlamaForCausalLM, "
               "MistralForCausalLM, Qwen2ForCausalLM");
    }
    if (!j["architectures"][0].is_string()) k.refuse("architectures", "must name a class");
    hf.architecture = j["architectures"][0].get<std::string>();
    hf.torch_dtype = k.text_or("torch_dtype", k.text_or("dtype", ""));
    if (hf.architecture == "GPT2LMHeadModel") {
      read_gpt2(k, hf);
    } else if (hf.architecture == "LlamaForCausalLM" || hf.architecture == "MistralForCausalLM" ||
               hf.architecture == "Qwen2ForCausalLM") {
      read_llama(k, hf, base);
    } else {
      k.refuse("architectures",
               "valid: GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, "
               "Qwen2ForCausalLM");
    }
  } catch (const json::exception& e) {
    throw ConfigError(str(path, ": ", e.what()));
  }
  return hf;
}

void write_hf_config(const ModelConfig& m, const std::string& torch_dtype, const std::string& dir) {
  json j;
  if (m.arch == ModelKind::kGpt) {
    j = {{"architectures", {"GPT2LMHeadModel"}},
         {"model_type", "gpt2"},
         {"vocab_size", m.vocab},
         {"n_positions", m.seq_len},
         {"n_ctx", m.seq_len},
         {"n_embd", m.hidden},
         {"n_layer", m.layers},
         {"n_head", m.heads},
         {"n_inner", nullptr},
         {"activation_function", m.activation == Activation::kGeluTanh ? "gelu_new" : "gelu"},
         {"layer_norm_epsilon", 1e-5},
         {"resid_pdrop", m.dropout},
         {"embd_pdrop", m.dropout},
         {"attn_pdrop", m.dropout},
         {"initializer_range", 0.02},
         {"scale_attn_weights", true},
         {"tie_word_embeddings", m.tie_embeddings}};
  } else if (m.arch == ModelKind::kLlama) {
    const int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
    j = {{"architectures", {m.qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
         {"model_type", m.qkv_bias ? "qwen2" : "llama"},
         {"vocab_size", m.vocab},
         {"hidden_size", m.hidden},
         {"intermediate_size", m.intermediate_size},
         {"num_hidden_layers", m.layers},
         {"num_attention_heads", m.heads},
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
  } else {
    throw ConfigError(str("model.arch: ", choice_name(m.arch),
                          ": no Hugging Face architecture (valid: gpt, llama)"));
  }
  j["torch_dtype"] = torch_dtype;
  AtomicFile out((std::filesystem::path(dir) / "config.json").string());
  const std::string text = j.dump(2) + "\n";
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace triax
