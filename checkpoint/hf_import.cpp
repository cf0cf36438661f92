#include "checkpoint/hf_import.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "checkpoint/convert.h"
#include "checkpoint/hf_names.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

// Triax names -> the folder's tensors, converted when the writer asks.
class HfSource : public FullTensorSource {
 public:
  HfSource(const HfFolder& folder, const std::vector<HfTensor>& table) : folder_(folder) {
    for (const HfTensor& t : table) by_triax_[t.triax] = t;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& item : by_triax_) out.push_back(item.first);
    return out;
  }
  torch::Tensor get(const std::string& name) const override {
    const HfTensor& t = by_triax_.at(name);
    const torch::Tensor full = folder_.as_float(t.hf);
    return t.transposed ? full.t() : full;
  }
  void done(const std::string& name) const override { folder_.release(by_triax_.at(name).hf); }

 private:
  const HfFolder& folder_;
  std::map<std::string, HfTensor> by_triax_;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  return str("[", join(shape, ", "), "]");
}

// Every expected tensor present with its shape, nothing unexplained left over.
void check_tensors(const HfFolder& folder, const std::vector<HfTensor>& table,
                   const ModelConfig& model, const std::string& embedding) {
  std::set<std::string> expected;
  for (const HfTensor& t : table) {
    expected.insert(t.hf);
    if (!folder.contains(t.hf)) {
      throw ConfigError(str(folder.dir(), ": tensor ", t.hf, " is missing",
                            t.triax == "head.weight"
                                ? " (config.json says tie_word_embeddings: false; a tied model "
                                  "has no lm_head)"
                                : ""));
    }
    const TensorInfo& info = folder.info(t.hf);
    if (info.shape != t.hf_shape) {
      throw ConfigError(str(folder.dir(), ": tensor ", t.hf, " has shape ", shape_text(info.shape),
                            "; config.json implies ", shape_text(t.hf_shape)));
    }
  }
  std::vector<std::string> unknown;
  for (const std::string& name : folder.names()) {
    if (expected.count(name) != 0 || hf_ignored(name)) continue;
    if (name == "lm_head.weight" && model.tie_embeddings) {
      // Some saves carry the tied head anyway: it must be the embedding.
      if (!folder.as_float(name).equal(folder.as_float(embedding))) {
        throw ConfigError(str(folder.dir(), ": lm_head.weight differs from ", embedding,
                              " although config.json says tie_word_embeddings: true"));
      }
      continue;
    }
    unknown.push_back(name);
  }
  if (!unknown.empty()) {
    const size_t shown = std::min<size_t>(unknown.size(), 5);
    throw ConfigError(
        str(folder.dir(), ": ", unknown.size(), " tensor(s) triax does not know: ",
            join(std::vector<std::string>(unknown.begin(), unknown.begin() + shown), ", "),
            unknown.size() > shown ? ", ..." : "",
            " (docs/interop.md lists the supported architectures)"));
  }
}

}  // namespace

HfFolder::HfFolder(const std::string& dir) : dir_(dir) {
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    nlohmann::json j;
    try {
      std::ifstream in(index);
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(str(index.string(), ": not JSON: ", e.what()));
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
      throw ConfigError(str(index.string(), ": no weight_map object"));
    }
    std::map<std::string, std::shared_ptr<SafetensorsMap>> opened;
    for (const auto& [name, file] : j["weight_map"].items()) {
      const std::string f = file.get<std::string>();
      auto& map = opened[f];
      if (!map) {
        if (!fs::exists(fs::path(dir) / f)) {
          throw ConfigError(str(index.string(), ": ", name, " is in ", f, ", which is missing"));
        }
        map = std::make_shared<SafetensorsMap>((fs::path(dir) / f).string());
      }
      if (!map->contains(name)) {
        throw ConfigError(str(index.string(), ": ", name, " is not in ", f));
      }
      files_[name] = map;
    }
  } else if (fs::exists(single)) {
    auto map = std::make_shared<SafetensorsMap>(single.string());
    for (const std::string& name : map->names()) files_[name] = map;
  } else {
    throw ConfigError(str(dir, ": neither model.safetensors nor model.safetensors.index.json"));
  }
}

std::vector<std::string> HfFolder::names() const {
  std::vector<std::string> out;
  for (const auto& item : files_) out.push_back(item.first);
  return out;
}

const TensorInfo& HfFolder::info(const std::string& name) const {
  const auto it = files_.find(name);
  if (it == files_.end()) throw ConfigError(str(dir_, ": no tensor ", name));
  return it->second->info(name);
}

torch::Tensor HfFolder::as_float(const std::string& name) const {
  const auto it = files_.find(name);
  if (it == files_.end()) throw ConfigError(str(dir_, ": no tensor ", name));
  return it->second->as_float(name);
}

void HfFolder::release(const std::string& name) const {
  const auto it = files_.find(name);
  if (it != files_.end()) it->second->release(name);
}

HfImport import_hf(const std::string& dir, const Config& base, int tensor, int pipeline,
                   int chunks_per_rank, const std::string& out_root) {
  HfImport result;
  result.hf = read_hf_config(dir, base.model);
  result.config = base;
  result.config.model = result.hf.model;
  const HfFolder folder(dir);
  const bool gpt = result.config.model.arch == ModelKind::kGpt;
  // GPT-2: save_pretrained writes "transformer."; the original upload has no prefix.
  const std::string prefix = gpt && folder.contains("transformer.wte.weight") ? "transformer." : "";
  const std::vector<HfTensor> table = hf_tensors(result.config.model, prefix);
  check_tensors(folder, table, result.config.model, table.front().hf);
  result.tensors = static_cast<int64_t>(folder.names().size());
  result.checkpoint_dir = write_sharded_checkpoint(result.config, 0, HfSource(folder, table),
                                                   tensor, pipeline, chunks_per_rank, out_root);
  Config train = result.config;
  train.parallel.tensor = tensor;
  train.parallel.pipeline = pipeline;
  train.schedule.chunks_per_rank = chunks_per_rank;
  train.schedule.name = schedule_for_chunks(train.schedule.name, chunks_per_rank);
  result.config_path = (fs::path(out_root) / "config.yaml").string();
  const std::string yaml = str("# imported from ", dir, " (", result.hf.architecture,
                               "): train with --resume ", out_root, "\n", to_yaml(train));
  AtomicFile out(result.config_path);
  out.write(yaml.data(), yaml.size());
  out.commit();
  return result;
}

}  // namespace triax
