#include "interop/hf_export.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/strings.h"
#include "interop/hf_config.h"

namespace triax {

namespace fs = std::filesystem;

HfExport export_hf(const FullModelState& state, const std::string& dir, const std::string& dtype,
                   int64_t max_shard_bytes) {
  if (dtype != "fp32" && dtype != "bf16") {
    throw ConfigError(str("--dtype ", dtype, ": valid: fp32, bf16"));
  }
  if (fs::exists(dir) && !fs::is_empty(dir)) {
    throw ConfigError(
        str("--out ", dir, ": exists and is not empty (valid: a new or empty folder)"));
  }
  const ModelConfig& model = state.config.model;
  const HfFamily& family = hf_family_of(model);
  const torch::ScalarType type = dtype == "bf16" ? torch::kBFloat16 : torch::kFloat;
  // Shards in table order, each closed before it would pass the bound.
  std::vector<SafetensorsFile> shards(1);
  int64_t in_shard = 0;
  HfExport result;
  for (const HfTensor& t : family.tensors(model, family.save_prefix)) {
    const auto it = state.tensors.find(t.triax);
    TRIAX_CHECK(it != state.tensors.end(), "the checkpoint has no parameter ", t.triax);
    torch::Tensor tensor = (t.transposed ? it->second.t() : it->second).contiguous().to(type);
    TRIAX_CHECK(tensor.sizes().vec() == t.hf_shape, t.triax, " has shape ", tensor.sizes(),
                ", Hugging Face's ", t.hf, " needs [", join(t.hf_shape, ", "), "]");
    const int64_t bytes = tensor.numel() * tensor.element_size();
    if (max_shard_bytes > 0 && in_shard > 0 && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().tensors.emplace_back(t.hf, tensor);
    in_shard += bytes;
    result.bytes += bytes;
    ++result.tensors;
  }
  fs::create_directories(dir);
  write_hf_config(model, dtype == "bf16" ? "bfloat16" : "float32", dir);
  nlohmann::json weight_map = nlohmann::json::object();
  const size_t n = shards.size();
  for (size_t k = 0; k < n; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, n);
    const std::string file = n == 1 ? "model.safetensors" : name;
    shards[k].metadata = {{"format", "pt"}};
    save_safetensors((fs::path(dir) / file).string(), shards[k]);
    for (const auto& item : shards[k].tensors) weight_map[item.first] = file;
  }
  if (n > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", result.bytes}}},
                                  {"weight_map", weight_map}};
    AtomicFile out((fs::path(dir) / "model.safetensors.index.json").string());
    const std::string text = index.dump(2) + "\n";
    out.write(text.data(), text.size());
    out.commit();
  }
  result.files = static_cast<int>(n);
  return result;
}

}  // namespace triax
