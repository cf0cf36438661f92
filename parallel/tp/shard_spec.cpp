#include "parallel/tp/shard_spec.h"

#include "core/error.h"

namespace triax {

torch::Tensor shard_of(const torch::Tensor& full, const ShardSpec& spec, int rank, int size) {
  TRIAX_CHECK(full.size(spec.dim) == spec.full_size, "full tensor has ", full.size(spec.dim),
              " along dim ", spec.dim, ", spec says ", spec.full_size);
  torch::Tensor padded = full;
  if (spec.padded_size > spec.full_size) {
    std::vector<int64_t> shape = full.sizes().vec();
    shape[static_cast<size_t>(spec.dim)] = spec.padded_size - spec.full_size;
    padded = torch::cat({full, torch::zeros(shape, full.options())}, spec.dim);
  }
  TRIAX_CHECK(spec.padded_size % (spec.stride * size) == 0, "padded size ", spec.padded_size,
              " is not divisible by stride ", spec.stride, " x tp ", size);
  const int64_t block = spec.padded_size / spec.stride;
  const int64_t chunk = block / size;
  std::vector<torch::Tensor> parts;
  for (int64_t b = 0; b < spec.stride; ++b) {
    parts.push_back(padded.narrow(spec.dim, b * block + rank * chunk, chunk));
  }
  return torch::cat(parts, spec.dim);
}

torch::Tensor unshard(const std::vector<torch::Tensor>& shards, const ShardSpec& spec) {
  TRIAX_CHECK(!shards.empty(), "unshard: no shards");
  const int64_t chunk = shards[0].size(spec.dim) / spec.stride;
  std::vector<torch::Tensor> pieces;
  for (int64_t b = 0; b < spec.stride; ++b) {
    for (const auto& shard : shards) pieces.push_back(shard.narrow(spec.dim, b * chunk, chunk));
  }
  return torch::cat(pieces, spec.dim).narrow(spec.dim, 0, spec.full_size).contiguous();
}

std::map<std::string, ShardSpec> collect_shard_specs(const torch::nn::Module& module) {
  std::map<std::string, ShardSpec> specs;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const auto* sharded = dynamic_cast<const ShardedModule*>(item.value().get());
    if (sharded == nullptr) continue;
    for (const auto& [name, spec] : sharded->shard_specs()) {
      specs[item.key().empty() ? name : item.key() + "." + name] = spec;
    }
  }
  return specs;
}

std::map<std::string, ParamTraits> collect_param_traits(const torch::nn::Module& module) {
  std::map<std::string, ParamTraits> traits;
  for (const auto& item : module.named_parameters()) traits[item.key()] = ParamTraits{};
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const auto* sharded = dynamic_cast<const ShardedModule*>(item.value().get());
    if (sharded == nullptr) continue;
    const auto full = [&](const std::string& name) {
      return item.key().empty() ? name : item.key() + "." + name;
    };
    for (const auto& [name, spec] : sharded->shard_specs()) {
      ParamTraits& t = traits[full(name)];
      t.sharded = true;
      t.spec = spec;
    }
    for (const auto& name : sharded->tied_parameters()) traits[full(name)].tied = true;
    for (const auto& name : sharded->tied_copies()) traits[full(name)].tied_copy = true;
  }
  return traits;
}

}  // namespace triax
