// defines: triax::ShardSpec, triax::ShardedModule, triax::shard_of, triax::unshard,
//          triax::collect_shard_specs
//
// How a tensor-parallel parameter relates to the full (unsharded) one, so that tests can
// compare shards with the unsharded layer and checkpoints can be resharded.
// Along `dim`, the full tensor (padded with zeros from `full_size` to `padded_size`) is viewed
// as `stride` equal blocks, and each block is split into tp equal chunks; rank r holds chunk r
// of every block, concatenated. stride > 1 serves fused projections (Q, K and V in one matrix:
// each rank must hold its heads of all three). Parameters without a spec are replicated.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace triax {

struct ShardSpec {
  int64_t dim = 0;          ///< the split dimension
  int64_t stride = 1;       ///< blocks along dim, each split across tp
  int64_t full_size = 0;    ///< size of dim in the real (unpadded) parameter
  int64_t padded_size = 0;  ///< size of dim after padding to a multiple of tp * stride
};

/// A module whose own parameters (not its children's) are sharded; names as in
/// named_parameters(/*recurse=*/false).
class ShardedModule {
 public:
  virtual ~ShardedModule() = default;
  virtual std::map<std::string, ShardSpec> shard_specs() const = 0;
};

/// Rank `rank`'s shard of the full parameter `full` (padding added as zeros).
torch::Tensor shard_of(const torch::Tensor& full, const ShardSpec& spec, int rank, int size);

/// The inverse of shard_of: every rank's shard, in rank order -> the full tensor, padding
/// removed (only `dim`, `stride` and `full_size` of the spec are needed).
torch::Tensor unshard(const std::vector<torch::Tensor>& shards, const ShardSpec& spec);

/// The specs of every sharded parameter of `module` and its descendants, by full name.
std::map<std::string, ShardSpec> collect_shard_specs(const torch::nn::Module& module);

}  // namespace triax
