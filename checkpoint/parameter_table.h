// defines: triax::parameter_table
//
// The manifest's parameter table of one model chunk: each parameter's global stage, its full
// (unpadded) shape and its tensor-parallel split, read from the chunk's own ShardSpecs, so the
// checkpoint records exactly the slicing training used (no second copy of the rules). Training
// and the offline converter both build it this way.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>
#include "checkpoint/manifest.h"

namespace triax {

std::vector<ParameterEntry> parameter_table(const torch::nn::Module& chunk, int64_t stage);

}  // namespace triax
