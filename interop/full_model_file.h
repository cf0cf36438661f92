// defines: triax::export_full_model, triax::import_full_model
//
// `triax export CKPT --out FILE` / `triax import FILE`: the whole model as one safetensors file
// of its full parameters under their triax names, with the model's sizes and the config as
// metadata (what tests/models/gpt_reference.py reads into an ordinary PyTorch model), and back:
// such a file -> a FullModelState at step 0 (weights only, no optimizer state), which
// write_sharded_checkpoint (checkpoint/convert.h) lays out for any layout.
#pragma once

#include <string>

#include "checkpoint/convert.h"

namespace triax {

void export_full_model(const FullModelState& state, const std::string& path);
FullModelState import_full_model(const std::string& path);

}  // namespace triax
