// defines: triax::HfFolder, triax::HfImport, triax::import_hf
//
// `triax import HF_DIR --tensor T --pipeline P --out DIR`: a Hugging Face model folder
// (config.json + model.safetensors, or shards listed by model.safetensors.index.json) -> a triax
// checkpoint at step 0 for that layout, plus DIR/config.yaml to train it with
// (`triax train DIR/config.yaml --resume DIR`). The safetensors files are memory-mapped and each
// tensor is converted (F16/BF16 -> fp32, Conv1D transposed) only when its shard is written, so
// the import holds one rank's shard plus one full tensor, whatever the model's size.
// Nothing is silent: a tensor the table (checkpoint/hf_names.h) does not know, one it expects and
// the folder lacks, a shape that disagrees with config.json, or an lm_head that differs from a
// tied embedding is an error naming the tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/hf_config.h"
#include "core/config.h"
#include "core/safetensors_map.h"

namespace triax {

/// The safetensors files of a Hugging Face folder, mapped, by tensor name.
class HfFolder {
 public:
  /// Throws ConfigError naming the folder when it has neither model.safetensors nor an index,
  /// or the index names a file that is missing or lacks the tensor.
  explicit HfFolder(const std::string& dir);
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return files_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;
  /// fp32 (a view of the mapping for F32 tensors).
  torch::Tensor as_float(const std::string& name) const;
  /// Lets go of the tensor's mapped pages (SafetensorsMap::release).
  void release(const std::string& name) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, std::shared_ptr<SafetensorsMap>> files_;  ///< tensor -> its file
};

struct HfImport {
  HfModelConfig hf;
  Config config;               ///< `base` with the folder's model section
  std::string checkpoint_dir;  ///< OUT/step_00000000
  std::string config_path;     ///< OUT/config.yaml
  int64_t tensors = 0;         ///< Hugging Face tensors read
};

/// The import; `base` is the rest of the training configuration (defaults, or the user's YAML).
HfImport import_hf(const std::string& dir, const Config& base, int tensor, int pipeline,
                   int chunks_per_rank, const std::string& out_root);

}  // namespace triax
