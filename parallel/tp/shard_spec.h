// defines: triax::ShardSpec, triax::ShardedModule, triax::shard_of, triax::unshard,
//          triax::collect_shard_specs, triax::ParamTraits, triax::collect_param_traits
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
  /// Its parameters that are a copy of a weight tied across modules (the token embedding that
  /// is also the output head): their gradients are summed over all copies after backward.
  virtual std::vector<std::string> tied_parameters() const { return {}; }
  /// Of those, the second copies (the head's on the last pipeline stage): the first copy stands
  /// for both in the gradient norm and the parameter count.
  virtual std::vector<std::string> tied_copies() const { return {}; }
};

/// What the trainer asks of a parameter, set by the layer that owns it (Megatron's
/// `tensor_model_parallel` and `shared` attributes), never derived from its name.
struct ParamTraits {
  bool sharded = false;  ///< split over tp (spec below); otherwise replicated on every tp rank
  ShardSpec spec;
  bool tied = false;       ///< a copy of a tied weight (gradients summed over the copies)
  bool tied_copy = false;  ///< its second copy
  /// Counts in the global gradient norm and the parameter count on tp rank `tp_rank`: each
  /// parameter of the whole model exactly once (see parallel/dp/grad_norm.h).
  bool counted(int tp_rank) const { return !tied_copy && (sharded || tp_rank == 0); }
  /// Elements of the real (unpadded) parameter that this rank's `numel` elements stand for.
  double real_elements(int64_t numel) const {
    return sharded ? static_cast<double>(numel) * static_cast<double>(spec.full_size) /
                         static_cast<double>(spec.padded_size)
                   : static_cast<double>(numel);
  }
};

/// The traits of every parameter of `module` and its descendants, by full name (parameters of
/// modules that are not ShardedModule are replicated, untied).
std::map<std::string, ParamTraits> collect_param_traits(const torch::nn::Module& module);

/// Rank `rank`'s shard of the full parameter `full` (padding added as zeros).
torch::Tensor shard_of(const torch::Tensor& full, const ShardSpec& spec, int rank, int size);

/// The inverse of shard_of: every rank's shard, in rank order -> the full tensor, padding
/// removed (only `dim`, `stride` and `full_size` of the spec are needed).
torch::Tensor unshard(const std::vector<torch::Tensor>& shards, const ShardSpec& spec);

/// The specs of every sharded parameter of `module` and its descendants, by full name.
std::map<std::string, ShardSpec> collect_shard_specs(const torch::nn::Module& module);

}  // namespace triax
