// unshard is the inverse of shard_of for every kind of split the layers use: rows or columns,
// fused projections (stride 3), vocabularies padded to a multiple of tp, at tp 1, 2 and 4.
#include <catch2/catch.hpp>

#include "parallel/tp/shard_spec.h"

using triax::ShardSpec;

TEST_CASE("unshard(shard_of(x)) == x for every shard spec", "[tp]") {
  struct Case {
    std::vector<int64_t> shape;
    ShardSpec spec;
  };
  // padded_size is filled in per tp below: full_size rounded up to a multiple of tp * stride.
  const std::vector<Case> cases{
      {{8, 6}, {0, 1, 8, 0}},    // column-parallel weight: rows split
      {{6, 8}, {1, 1, 8, 0}},    // row-parallel weight: columns split
      {{24, 4}, {0, 3, 24, 0}},  // fused QKV: each rank holds its slice of Q, K and V
      {{12}, {0, 3, 12, 0}},     // its bias
      {{13, 4}, {0, 1, 13, 0}},  // a vocabulary tp must pad
      {{13}, {0, 1, 13, 0}},
  };
  torch::manual_seed(3);
  for (const Case& c : cases) {
    const torch::Tensor full = torch::randn(c.shape);
    for (int tp : {1, 2, 4}) {
      ShardSpec spec = c.spec;
      const int64_t unit = tp * spec.stride;
      spec.padded_size = (spec.full_size + unit - 1) / unit * unit;
      std::vector<torch::Tensor> shards;
      for (int r = 0; r < tp; ++r) shards.push_back(triax::shard_of(full, spec, r, tp));
      INFO("shape " << full.sizes() << " dim " << spec.dim << " stride " << spec.stride << " tp "
                    << tp);
      CHECK(shards[0].size(spec.dim) * tp == spec.padded_size);
      CHECK(triax::unshard(shards, spec).equal(full));
    }
  }
}

TEST_CASE("a stride-3 shard holds the rank's block of each third", "[tp]") {
  const torch::Tensor full = torch::arange(12, torch::kFloat);
  const ShardSpec spec{0, 3, 12, 12};
  CHECK(triax::shard_of(full, spec, 1, 2).equal(torch::tensor({2.f, 3.f, 6.f, 7.f, 10.f, 11.f})));
}
