// defines: triax::HfExport, triax::export_hf
//
// `triax export CKPT --hf --out DIR [--dtype bf16] [--max-shard-mb N]`: a triax checkpoint ->
// a Hugging Face folder that `transformers` loads (from_pretrained): config.json, the weights
// under Hugging Face's names (the family's table, models/hf_family.h; vocabulary padding already
// stripped by read_full_state) in fp32 or bf16, as model.safetensors or, past N MiB, as
// model-0000k-of-0000n.safetensors shards with model.safetensors.index.json (written last).
#pragma once

#include <cstdint>
#include <string>

#include "checkpoint/convert.h"

namespace triax {

struct HfExport {
  int files = 0;        ///< safetensors files written
  int64_t tensors = 0;  ///< tensors written
  int64_t bytes = 0;    ///< tensor bytes written
};

/// `dtype`: "fp32" or "bf16". `max_shard_bytes` <= 0: one file. Throws ConfigError when DIR
/// exists and is not empty, or the model has no Hugging Face form.
HfExport export_hf(const FullModelState& state, const std::string& dir, const std::string& dtype,
                   int64_t max_shard_bytes);

}  // namespace triax
