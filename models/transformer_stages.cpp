#include "models/transformer_stages.h"

#include "core/error.h"
#include "parallel/grad_sums.h"

namespace triax {

std::vector<std::pair<int64_t, int64_t>> split_layers(int64_t layers, int parts,
                                                      const std::vector<int64_t>& boundaries) {
  if (parts > layers) {
    throw ConfigError(str("parallel.pipeline x schedule.chunks_per_rank = ", parts,
                          " stages exceed model.layers=", layers, " (each stage needs a layer)"));
  }
  std::vector<int64_t> starts{0};
  if (boundaries.empty()) {
    for (int i = 1; i < parts; ++i)
      starts.push_back(starts.back() + layers / parts + (i - 1 < layers % parts ? 1 : 0));
  } else {
    if (static_cast<int>(boundaries.size()) != parts - 1) {
      throw ConfigError(str("schedule.layer_boundaries: ", boundaries.size(), " boundaries for ",
                            parts, " stages (valid: ", parts - 1,
                            " increasing layer indices in (0, ", layers, "))"));
    }
    for (int64_t b : boundaries) {
      if (b <= starts.back() || b >= layers) {
        throw ConfigError(str("schedule.layer_boundaries: [", join(boundaries, ", "),
                              "] must increase strictly within (0, ", layers,
                              ") so every stage holds a layer"));
      }
      starts.push_back(b);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t i = 0; i < starts.size(); ++i) {
    ranges.emplace_back(starts[i], i + 1 < starts.size() ? starts[i + 1] : layers);
  }
  return ranges;
}

void all_reduce_tied_embedding_grads(std::vector<Transformer>& chunks,
                                     Communicator* embedding_group) {
  std::vector<torch::Tensor> copies;
  for (auto& chunk : chunks) {
    for (const auto& [name, traits] : collect_param_traits(*chunk)) {
      if (traits.tied) copies.push_back(chunk->named_parameters()[name]);
    }
  }
  sum_tied_grads(copies, embedding_group);
}

}  // namespace triax
