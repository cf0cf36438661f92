#include "interop/hf_import.h"

#include <filesystem>
#include <set>

#include "checkpoint/convert.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/strings.h"
#include "interop/hf_config.h"
#include "interop/hf_folder.h"

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
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A buffer the family recomputes (HfFamily::ignored_suffixes).
bool ignored(const HfFamily& family, const std::string& name) {
  for (const std::string& suffix : family.ignored_suffixes) {
    if (ends_with(name, suffix)) return true;
  }
  return false;
}

void check_tensors(const HfFolder& folder, const HfFamily& family,
                   const std::vector<HfTensor>& table, const ModelConfig& model,
                   const std::string& embedding) {
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
    if (expected.count(name) != 0 || ignored(family, name)) continue;
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

HfImport import_hf(const std::string& dir, const Config& base, int tensor, int pipeline,
                   int chunks_per_rank, const std::string& out_root) {
  HfImport result;
  result.hf = read_hf_config(dir, base.model);
  result.config = base;
  result.config.model = result.hf.model;
  const HfFolder folder(dir);
  const HfFamily& family = hf_family_of(result.config.model);
  // save_pretrained's prefix (GPT-2: "transformer.") where the folder has it; older uploads
  // have none.
  std::vector<HfTensor> table = family.tensors(result.config.model, family.save_prefix);
  if (!folder.contains(table.front().hf)) table = family.tensors(result.config.model, "");
  check_tensors(folder, family, table, result.config.model, table.front().hf);
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
