#include "interop/hf_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"

namespace triax {
namespace {

using nlohmann::json;

// Every architecture some family reads, in the order errors list them.
std::string known_architectures() {
  std::vector<std::string> names;
  for (const ModelSpec* spec : model_specs()) {
    if (spec->hf)
      names.insert(names.end(), spec->hf->architectures.begin(), spec->hf->architectures.end());
  }
  return join(names, ", ");
}

const HfFamily* family_reading(const std::string& architecture) {
  for (const ModelSpec* spec : model_specs()) {
    if (!spec->hf) continue;
    for (const std::string& a : spec->hf->architectures) {
      if (a == architecture) return spec->hf;
    }
  }
  return nullptr;
}

}  // namespace

const HfFamily& hf_family_of(const ModelConfig& model) {
  const ModelSpec& spec = model_spec(model.arch);
  if (!spec.hf) {
    std::vector<std::string> valid;
    for (const ModelSpec* s : model_specs()) {
      if (s->hf) valid.push_back(choice_name(s->kind));
    }
    throw ConfigError(str("model.arch: ", choice_name(model.arch),
                          ": no Hugging Face architecture (valid: ", join(valid, ", "), ")"));
  }
  return *spec.hf;
}

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
  const HfConfigKeys k(j, path);
  HfModelConfig hf;
  // A value of the wrong JSON type that a check below reads directly (nlohmann's type_error,
  // which names neither the file nor the key): refused naming the file.
  try {
    hf.model = base;
    if (!k.has("architectures") || !j["architectures"].is_array() || j["architectures"].empty()) {
      k.refuse("architectures", "needs one of " + known_architectures());
    }
    if (!j["architectures"][0].is_string()) k.refuse("architectures", "must name a class");
    hf.architecture = j["architectures"][0].get<std::string>();
    hf.torch_dtype = k.text_or("torch_dtype", k.text_or("dtype", ""));
    const HfFamily* family = family_reading(hf.architecture);
    if (!family) k.refuse("architectures", "valid: " + known_architectures());
    family->read_config(k, base, hf);
  } catch (const json::exception& e) {
    throw ConfigError(str(path, ": ", e.what()));
  }
  return hf;
}

void write_hf_config(const ModelConfig& model, const std::string& torch_dtype,
                     const std::string& dir) {
  json j = hf_family_of(model).write_config(model);
  j["torch_dtype"] = torch_dtype;
  AtomicFile out((std::filesystem::path(dir) / "config.json").string());
  const std::string text = j.dump(2) + "\n";
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace triax
