// defines: triax::HfTensor, triax::HfModelConfig, triax::HfConfigKeys, triax::HfSizeKey,
//          triax::read_sizes, triax::write_sizes, triax::append_layer_tensors, triax::HfFamily
//
// What a model family knows of its Hugging Face form: which `architectures` of a config.json it
// computes, how that file's keys are its model.* keys (both ways), and the one table of how the
// folder's tensors are its full-model parameters, read by both import and export so they cannot
// disagree. A family without a Hugging Face form (the MLP) has none (ModelSpec::hf is null).
// The folder, the file and the conversions themselves are interop/'s; the facts are here, beside
// the model they describe (models/gpt_hf.cpp, models/llama_hf.cpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
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

struct HfModelConfig {
  std::string architecture;   ///< e.g. "LlamaForCausalLM"
  ModelConfig model;          ///< triax's model section (seq_len: see HfFamily::read_config)
  std::string torch_dtype;    ///< "float32", "bfloat16", ... ("" when absent)
  int64_t max_positions = 0;  ///< n_positions / max_position_embeddings
};

/// The keys of one config.json, each read with its file and key in every refusal (a
/// ConfigError: "PATH: KEY: VALUE: RULE").
class HfConfigKeys {
 public:
  HfConfigKeys(nlohmann::json j, std::string path) : j_(std::move(j)), path_(std::move(path)) {}

  bool has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  const nlohmann::json& at(const std::string& key) const { return j_.at(key); }
  int64_t integer(const std::string& key) const;
  int64_t integer_or(const std::string& key, int64_t fallback) const;
  double number_or(const std::string& key, double fallback) const;
  bool boolean_or(const std::string& key, bool fallback) const;
  std::string text_or(const std::string& key, const std::string& fallback) const;
  const std::string& path() const { return path_; }
  [[noreturn]] void refuse(const std::string& key, const std::string& rule) const;

 private:
  nlohmann::json j_;
  std::string path_;
};

/// A config.json integer that is one of the model's sizes, named once for both directions.
struct HfSizeKey {
  const char* key;              ///< e.g. "n_embd"
  int64_t ModelConfig::*field;  ///< e.g. &ModelConfig::hidden
};

/// Each size from its key (refused naming the key when absent or not an integer).
void read_sizes(const HfConfigKeys& keys, const std::vector<HfSizeKey>& sizes, ModelConfig& m);
/// Each size under its key.
void write_sizes(const std::vector<HfSizeKey>& sizes, const ModelConfig& m, nlohmann::json& j);

/// Appends every layer's tensors: layer i's `per_layer` entries, named LAYER_PREFIX + i + "." +
/// their hf name (e.g. "model.layers.3.self_attn.q_proj.weight") and "layer" + i + "." + their
/// triax name.
void append_layer_tensors(std::vector<HfTensor>& out, int64_t layers,
                          const std::string& layer_prefix, const std::vector<HfTensor>& per_layer);

struct HfFamily {
  /// The config.json `architectures` this family computes exactly, as they are named there.
  std::vector<std::string> architectures;
  /// Sets hf.model's family keys and hf.max_positions from the file (hf.model starts as `base`,
  /// which gives what the file does not decide; hf.architecture is set). Refuses, naming the key,
  /// anything the family would compute differently.
  void (*read_config)(const HfConfigKeys& keys, const ModelConfig& base, HfModelConfig& hf);
  /// config.json for `model`, without torch_dtype.
  nlohmann::json (*write_config)(const ModelConfig& model);
  /// Every tensor of `model` in Hugging Face form, in the order export writes them, each name
  /// after `prefix` (see save_prefix).
  std::vector<HfTensor> (*tensors)(const ModelConfig& model, const std::string& prefix);
  /// What save_pretrained writes before the tensor names where older uploads have nothing
  /// (GPT-2: "transformer."; import accepts both, export writes it); "" when fixed in the table.
  const char* save_prefix;
  /// Tensor-name endings of buffers the family recomputes and import skips (GPT-2's causal
  /// masks, a stored rotary inv_freq).
  std::vector<std::string> ignored_suffixes;
};

}  // namespace triax
