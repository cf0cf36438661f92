// defines: triax::HfImport, triax::import_hf
//
// `triax import HF_DIR --tensor T --pipeline P --out DIR`: a Hugging Face model folder
// (config.json + model.safetensors, or shards listed by model.safetensors.index.json) -> a triax
// checkpoint at step 0 for that layout, plus DIR/config.yaml to train it with
// (`triax train DIR/config.yaml --resume DIR`). The safetensors files are memory-mapped and each
// tensor is converted (F16/BF16 -> fp32, Conv1D transposed) only when its shard is written, so
// the import holds one rank's shard plus one full tensor, whatever the model's size.
// Nothing is silent: a tensor the family's table (ModelSpec::hf, models/hf_family.h) does not know,
// one it expects and the folder lacks, a shape that disagrees with config.json, or an lm_head that
// differs from a tied embedding is an error naming the tensor.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "models/hf_family.h"

namespace triax {

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
