#include "checkpoint/parameter_table.h"

#include "parallel/tp/shard_spec.h"

namespace triax {

std::vector<ParameterEntry> parameter_table(const torch::nn::Module& chunk, int64_t stage) {
  std::vector<ParameterEntry> table;
  const auto specs = collect_shard_specs(chunk);
  for (const auto& item : chunk.named_parameters()) {
    ParameterEntry entry;
    entry.name = item.key();
    entry.stage = stage;
    entry.shape = item.value().sizes().vec();
    const auto spec = specs.find(item.key());
    if (spec != specs.end()) {
      entry.tp_split_dim = spec->second.dim;
      entry.tp_split_stride = spec->second.stride;
      entry.shape[static_cast<size_t>(spec->second.dim)] = spec->second.full_size;
    }
    table.push_back(std::move(entry));
  }
  return table;
}

}  // namespace triax
