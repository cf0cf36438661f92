// defines: triax::seed_part, triax::kEmbeddingPart
//
// Every part of a transformer (the embedding, each global layer, the head) draws its initial
// weights after seeding the global generator from (seed, part), so its numbers depend only on
// (seed, part) — not on which other parts a pipeline stage builds, nor on the tp layout (layers
// draw the full matrix and keep their slice).
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace triax {

constexpr int64_t kEmbeddingPart = -1;

inline void seed_part(uint64_t seed, int64_t part) {
  torch::manual_seed(seed * 1000003ULL + static_cast<uint64_t>(part + 2));
}

}  // namespace triax
