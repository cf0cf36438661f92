#include "interop/full_model_file.h"

#include "checkpoint/state_name.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/strings.h"

namespace triax {

void export_full_model(const FullModelState& state, const std::string& path) {
  SafetensorsFile file;
  for (const auto& [key, tensor] : state.tensors) {
    if (!StateName::parse(key).is_optimizer_state()) file.tensors.emplace_back(key, tensor);
  }
  const ModelConfig& m = state.config.model;
  file.metadata = {{"format", "triax-full-model"},
                   {"vocab", std::to_string(m.vocab)},
                   {"hidden", std::to_string(m.hidden)},
                   {"heads", std::to_string(m.heads)},
                   {"layers", std::to_string(m.layers)},
                   {"seq_len", std::to_string(m.seq_len)},
                   {"tie_embeddings", m.tie_embeddings ? "true" : "false"},
                   {"step", std::to_string(state.step)},
                   {"config", to_yaml(state.config)}};
  save_safetensors(path, file);
}

FullModelState import_full_model(const std::string& path) {
  const SafetensorsFile file = load_safetensors(path);
  const auto config = file.metadata.find("config");
  if (config == file.metadata.end()) {
    throw ConfigError(str(path, ": no `config` metadata (valid: a file written by triax export)"));
  }
  FullModelState state;
  state.config = parse_config(config->second, {}, path);
  for (const auto& [name, tensor] : file.tensors) state.tensors[name] = tensor;
  return state;  // step 0: weights only, the optimizer starts fresh
}

}  // namespace triax
